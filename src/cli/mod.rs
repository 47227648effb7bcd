//! The command line: every option of `him`, in one place (here), how the binary knows the
//! browser started it ([`role`]), and the two subcommands that ask a person themselves:
//! `him ask` ([`ask`]) and `him try` ([`demo`]).

pub mod ask;
pub mod demo;
pub mod role;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "him",
    version,
    about = "Human input for MCP: an agent asks, a person answers in the browser side panel",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdio (register this with your MCP client), or with --http on
    /// Streamable HTTP for web chats and other HTTP clients.
    Serve(ServeArgs),
    /// Ask a question from a shell script; prints the result as JSON.
    Ask(AskArgs),
    /// Run as the browser's native-messaging host (the browser normally starts this).
    Host,
    /// Write the native-messaging host manifest for every detected browser.
    Install(InstallArgs),
    /// Remove exactly what `him install` and `him remote` wrote.
    Uninstall(UninstallArgs),
    /// Check the installation and say how to fix what is wrong.
    Doctor(DoctorArgs),
    /// Print the native-messaging host manifest for one browser.
    Manifest(ManifestArgs),
    /// Print the snippet that registers `him serve` with an MCP client.
    Config(ConfigArgs),
    /// Put a demo question in the browser's side panel and print what an agent would get.
    Try,
    /// Write the browser extension built into him (what `him install` writes) to a folder,
    /// or the Firefox add-on to an .xpi file: for packagers and tests.
    Extension(ExtensionArgs),
    /// The prompt `him ask` runs on the person's terminal: the form as JSON on stdin, the
    /// reply as JSON on stdout (internal; see `fallback/terminal.rs`).
    #[command(hide = true)]
    TerminalPrompt,
    /// Set up SSH so agents on HOST ask in this machine's browser: prints (or, with --write,
    /// puts in ~/.ssh/config, and in ~/.ssh/rc on HOST) the forward to this machine's gateway.
    Remote(RemoteArgs),
    /// Run the stable endpoint that forwarded and container agents reach (a browser's host
    /// starts it once `him remote` was run; it exits when no browser is left).
    Gateway,
    /// Create this machine's folder for forwarded sockets and print where it is, as JSON
    /// (`him remote` runs this on the other machine over ssh).
    #[command(hide = true)]
    ForwardedDir(ForwardedDirArgs),
    /// Free the name SSH binds in this machine's forwarded folder for the next connection
    /// (the line `him remote --write` put in ~/.ssh/rc runs this at each session's start).
    #[command(hide = true)]
    TidyForwarded,
    /// Answer from your phone and with your team: log a Matrix bot account in, choose the
    /// room, and run the bridge that takes agents' questions there.
    Matrix(MatrixArgs),
    /// Answer an agent's PermissionRequest hook in the side panel (the agent runs this:
    /// hook JSON on stdin, the decision on stdout; no decision when no one answers).
    Hook(HookArgs),
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    #[command(subcommand)]
    pub command: MatrixCommand,
}

#[derive(Debug, Subcommand)]
pub enum MatrixCommand {
    /// Log the bot account in (a dedicated account: the bridge posts as it). The password is
    /// read from the terminal, or from --password-file; never from the command line.
    Login(MatrixLoginArgs),
    /// Create the end-to-end encrypted room and invite you (or use --room), and say who may
    /// answer there.
    Room(MatrixRoomArgs),
    /// Run the bridge: a host that agents find as they find a browser's, posting their
    /// questions to the room (`him serve` and `him ask` start it when Matrix is set up).
    Bridge,
    /// Check the Matrix leg (logged in, room joined and encrypted, answerers there, the
    /// bridge's last sync, the bot's device verified) and say how to fix what fails; `him
    /// doctor` includes it.
    Doctor,
    /// Verify the bot with an answerer by comparing emojis, so their Matrix app shows the
    /// bot's messages without an "unverified" warning: start "Verify" on your phone (in the
    /// chat with the bot), then compare the 7 emojis here with your phone's.
    Verify,
    /// Log the bot's device out on the homeserver (so it leaves the account's device list)
    /// and remove the local Matrix session: the token, the encryption store, the room's
    /// settings. The account stays; `him matrix login` sets it up again.
    Logout,
}

#[derive(Debug, Args)]
pub struct MatrixLoginArgs {
    /// The homeserver's URL, e.g. https://matrix.org.
    #[arg(long, value_name = "URL")]
    pub homeserver: String,
    /// The bot account's Matrix ID, e.g. @him-bot:matrix.org.
    #[arg(long, value_name = "MXID")]
    pub user: String,
    /// Read the password from this file (its first line) instead of the terminal.
    #[arg(long, value_name = "PATH", conflicts_with = "token_file")]
    pub password_file: Option<PathBuf>,
    /// Use an access token of the account, read from this file, instead of a password.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MatrixRoomArgs {
    /// Who to invite to the new room (you), by Matrix ID; repeat or separate by commas.
    #[arg(
        long,
        value_name = "MXID",
        value_delimiter = ',',
        required_unless_present = "room"
    )]
    pub invite: Vec<String>,
    /// Who may answer (default: everyone invited); repeat or separate by commas.
    #[arg(long, value_name = "MXID", value_delimiter = ',')]
    pub answerers: Vec<String>,
    /// Use this existing room (the bot joins it) instead of creating one.
    #[arg(long, value_name = "ROOM_ID")]
    pub room: Option<String>,
    /// Post into a room that is not end-to-end encrypted (refused otherwise).
    #[arg(long)]
    pub allow_unencrypted: bool,
}

#[derive(Debug, Args)]
pub struct RemoteArgs {
    /// The SSH host, as you type it after `ssh` (an alias of ~/.ssh/config works).
    #[arg(required_unless_present = "container")]
    pub host: Option<String>,
    /// Write the block at the top of ~/.ssh/config (marked; replaces an earlier one for
    /// this host; `him uninstall` removes it) instead of only printing it, and, on HOST, the
    /// line in ~/.ssh/rc that frees the forwarded socket's name for the next connection
    /// (marked; `him uninstall` there removes it).
    #[arg(long)]
    pub write: bool,
    /// How to run him on HOST, when it is not on the PATH of a non-interactive ssh session.
    #[arg(long, value_name = "PATH", default_value = "him")]
    pub remote_him: String,
    /// Print how to give a container on this machine the gateway instead (no SSH).
    #[arg(long, conflicts_with_all = ["host", "write"])]
    pub container: bool,
}

#[derive(Debug, Args)]
pub struct ForwardedDirArgs {
    /// Also put the line that runs `him tidy-forwarded` in ~/.ssh/rc (marked; `him
    /// uninstall` removes it).
    #[arg(long)]
    pub ssh_rc: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookAgent {
    ClaudeCode,
    Codex,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent whose hook format to read and write.
    #[arg(value_enum)]
    pub agent: HookAgent,
    /// How long to wait for the person before leaving the decision to the agent's own
    /// prompt, in milliseconds (default 60000; keep it below the hook's `timeout`).
    #[arg(long, value_name = "MS")]
    pub wait_ms: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve MCP Streamable HTTP at /mcp on this address instead of stdio (default
    /// 127.0.0.1:7676; port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7676")]
    pub http: Option<String>,
    /// Print the HTTP bearer token (creating it if needed) and exit.
    #[arg(long, requires = "http")]
    pub print_token: bool,
    /// Replace the path token (the secret in the URL that `him config superassistant`
    /// prints), print the new URL and exit; the bearer token stays as it is.
    #[arg(long, requires = "http", conflicts_with = "print_token")]
    pub new_path_token: bool,
    /// Allow browser pages from this origin to call the HTTP endpoint (repeatable).
    #[arg(long = "allow-origin", value_name = "URL", requires = "http")]
    pub allow_origin: Vec<String>,
    /// Also offer `approve`, the tool Claude Code's `--permission-prompt-tool
    /// mcp__him__approve` calls to ask the person for each permission (stdio only).
    #[arg(long, conflicts_with = "http")]
    pub permission_tool: bool,
    /// Allow binding to a non-loopback address (anyone who can reach it and has the token can ask).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    #[command(subcommand)]
    pub kind: Option<AskKind>,
    /// Instead of asking: collect the person's answer to an earlier question whose call
    /// ended unanswered (the question_id its result named), waiting up to --timeout-ms while
    /// it is still open (0: look only).
    #[arg(long, value_name = "QUESTION_ID", conflicts_with = "no_tty")]
    pub answer_of: Option<String>,
    /// How long to wait for the person, in milliseconds (default: HIM_TIMEOUT_MS).
    #[arg(long, global = true, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Never ask in this terminal, even when no browser is connected: go straight to
    /// HIM_FALLBACK.
    #[arg(long, global = true)]
    pub no_tty: bool,
}

#[derive(Debug, Subcommand)]
pub enum AskKind {
    /// A free-text answer.
    Text {
        question: String,
        #[arg(long)]
        placeholder: Option<String>,
        #[arg(long)]
        default: Option<String>,
        #[arg(long)]
        multiline: bool,
    },
    /// One option out of several.
    Choice {
        question: String,
        /// The options (at least two).
        #[arg(required = true, num_args = 1..)]
        options: Vec<String>,
        #[arg(long)]
        default: Option<String>,
        /// Let the person add a free-text note.
        #[arg(long)]
        allow_free_text: bool,
    },
    /// Any number of options out of several.
    Multi {
        question: String,
        #[arg(required = true, num_args = 1..)]
        options: Vec<String>,
        #[arg(long)]
        min: Option<u32>,
        #[arg(long)]
        max: Option<u32>,
    },
    /// Yes or no.
    Confirm {
        question: String,
        #[arg(long)]
        default: Option<bool>,
    },
    /// A whole form, given as JSON (the `ask_form` arguments), or `-` to read it from stdin.
    Form { json: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Browser {
    Chrome,
    Chromium,
    Edge,
    Brave,
    Vivaldi,
    Opera,
    Firefox,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install only for these browsers (repeatable); default: every detected browser.
    #[arg(long = "browser", value_enum, value_name = "NAME")]
    pub browsers: Vec<Browser>,
    /// Also allow this Chromium extension id (repeatable), e.g. an unpacked copy with another id.
    #[arg(long = "extension-id", value_name = "ID")]
    pub extension_ids: Vec<String>,
    /// Install the Firefox add-on for good in Firefox ESR, Developer Edition and Nightly
    /// profiles without asking: this turns off signature checks for every add-on in them.
    #[arg(long, conflicts_with = "no_firefox_unsigned")]
    pub yes: bool,
    /// Do not turn off Firefox's signature checks (the add-on is then loaded as a temporary
    /// one, gone at each restart).
    #[arg(long)]
    pub no_firefox_unsigned: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtensionBuild {
    /// The Chromium-family extension, as a folder to load unpacked.
    Chromium,
    /// The Firefox add-on, as a folder.
    Firefox,
    /// The Firefox add-on, as one .xpi file.
    Xpi,
}

#[derive(Debug, Args)]
pub struct ExtensionArgs {
    #[arg(value_enum)]
    pub build: ExtensionBuild,
    /// The folder to write (made to hold exactly the extension's files), or the .xpi file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Uninstall only for these browsers (repeatable); default: all.
    #[arg(long = "browser", value_enum, value_name = "NAME")]
    pub browsers: Vec<Browser>,
    /// Also remove the local Matrix session (as `him matrix logout`: the bot's device is
    /// logged out on the homeserver; the account stays). Kept otherwise.
    #[arg(long)]
    pub matrix: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The address `him serve --http` uses, to check who holds its port (default
    /// 127.0.0.1:7676).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
}

#[derive(Debug, Args)]
pub struct ManifestArgs {
    #[arg(value_enum)]
    pub browser: Browser,
    /// Also allow this Chromium extension id (repeatable).
    #[arg(long = "extension-id", value_name = "ID")]
    pub extension_ids: Vec<String>,
    /// Use this path for the host binary instead of the running one.
    #[arg(long, value_name = "PATH")]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    Vscode,
    Codex,
    Gemini,
    Windsurf,
    /// OpenCode: an `mcp` block in opencode.json (it ignores `mcpServers`).
    Opencode,
    /// Qwen Code: `mcpServers` in ~/.qwen/settings.json.
    Qwen,
    Http,
    /// MCP SuperAssistant (web chats), which cannot send headers: a URL with a path token.
    Superassistant,
    /// fast-agent's `fastagent.config.yaml` (YAML).
    FastAgent,
    /// LangChain's `langchain-mcp-adapters` (`MultiServerMCPClient`), a Python snippet.
    Langchain,
    /// The OpenAI Agents SDK (`MCPServerStdio`), a Python snippet.
    OpenaiAgents,
    /// Pydantic AI (`MCPToolset`), a Python snippet.
    PydanticAi,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[arg(value_enum)]
    pub client: Client,
    /// Print the agent's PermissionRequest hook settings instead (claude-code, codex): a
    /// settings document of its own, for approving the agent's actions in the side panel.
    #[arg(long)]
    pub hooks: bool,
}
