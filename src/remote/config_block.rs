//! The marked `ssh_config` block of `him remote` (pure: text in, text out).

use std::path::{Component, Path, PathBuf};

const BEGIN: &str = "# >>> him remote ";
const END: &str = "# <<< him remote ";

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The host as the user types it after `ssh`.
    pub host: String,
    /// Where sshd binds on the remote machine (literal: no token expands there).
    pub remote_socket: PathBuf,
    /// The gateway's stable socket on this machine.
    pub local_socket: PathBuf,
}

/// Whether `path` can go into the block as it is: a plain absolute path (no `.` or `..`, no
/// empty part) of letters, digits, spaces and `/ . _ - + @ ,`. ssh_config would expand `%`
/// tokens and `${…}` variables in a socket path, `RemoteForward` splits its words at `:`,
/// and a newline, a quote, a backslash or a `#` would end the line, the word or the
/// directive early: the remote's answer could then add a directive of its choosing (a
/// `ProxyCommand`, which this machine would run at the next `ssh`). `whose` says which path
/// it is, for the error.
pub fn check_socket_path(path: &Path, whose: &str) -> Result<(), String> {
    let shown = format!("{:?}", path.as_os_str());
    let Some(text) = path.to_str() else {
        return Err(format!("{whose} {shown} is not UTF-8"));
    };
    if !path.is_absolute() {
        return Err(format!("{whose} {shown} is not an absolute path"));
    }
    if text.contains("//")
        || text.ends_with('/')
        || path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(format!(
            "{whose} {shown} is not a plain path (it has an empty, `.` or `..` part)"
        ));
    }
    if let Some(bad) = text
        .chars()
        .find(|&c| !(c.is_alphanumeric() || " /._-+@,".contains(c)))
    {
        return Err(format!(
            "{whose} {shown} holds {bad:?}, which ssh_config would not take as part of a path \
             (only letters, digits, spaces and / . _ - + @ , are used)"
        ));
    }
    Ok(())
}

/// The host as `him remote HOST` names it, checked as the `Host` line and the marker lines
/// take it: one word of visible characters, no quote, `#`, `%` or `$`, not an option.
pub fn check_host(host: &str) -> Result<(), String> {
    let fits = !host.is_empty()
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_graphic() && !"\"'\\#%$".contains(c));
    if fits {
        Ok(())
    } else {
        Err(format!(
            "the host {host:?} cannot be written into ~/.ssh/config: give it as one word, as \
             after `ssh` (letters, digits, . - _ @ and the like; no quotes, #, % or $)"
        ))
    }
}

/// A checked path as one ssh_config word: quoted when it holds a space.
fn config_word(path: &Path) -> String {
    let text = path.display().to_string();
    if text.contains(' ') {
        format!("\"{text}\"")
    } else {
        text
    }
}

/// A checked path as one shell word: quoted when it holds a space.
fn shell_word(text: &str) -> String {
    if text.contains(' ') {
        format!("'{text}'")
    } else {
        text.to_owned()
    }
}

impl Block {
    /// The block; its paths must have passed [`check_socket_path`] and its host
    /// [`check_host`].
    pub fn render(&self) -> String {
        let host = &self.host;
        format!(
            "{BEGIN}{host} >>>\n\
             # Written by `him remote {host}`; `him uninstall` removes it.\n\
             Host {host}\n  \
             RemoteForward {} {}\n  \
             # For RemoteForward only the remote sshd's own setting counts; it is said\n  \
             # here too; him there (a line in ~/.ssh/rc, and agents) frees the name.\n  \
             StreamLocalBindUnlink yes\n  \
             # One connection, so one forward, for the several sessions VS Code opens.\n  \
             ControlMaster auto\n  \
             ControlPath ~/.ssh/him-%C\n  \
             ControlPersist 10m\n  \
             # A connection gone dead is given up here after 60 s without a word (4 × 15 s),\n  \
             # and its questions leave the panel; agents there notice in 5 to 10 s themselves.\n  \
             ServerAliveInterval 15\n  \
             ServerAliveCountMax 3\n\
             # What follows applies to every host again, as before this block.\n\
             Host *\n\
             {END}{host} <<<\n",
            config_word(&self.remote_socket),
            config_word(&self.local_socket),
        )
    }

    pub fn ssh_command(&self) -> String {
        let forward = format!(
            "{}:{}",
            self.remote_socket.display(),
            self.local_socket.display()
        );
        format!("ssh -R {} {}", shell_word(&forward), self.host)
    }
}

/// `config` with `block` at the top, in place of an earlier block for the same host.
pub fn upsert_block(config: &str, block: &Block) -> String {
    let rest = remove_matching(config, |host| host == block.host);
    format!("{}{}", block.render(), rest)
}

/// `config` without any block of `him remote`.
pub fn remove_blocks(config: &str) -> String {
    remove_matching(config, |_| true)
}

/// A block whose end line is gone (edited away) is left as it is: what follows its start
/// is then the person's own configuration, not ours to drop.
fn remove_matching(config: &str, matches: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(config.len());
    // The host of the block being skipped, and its lines so far.
    let mut skipping: Option<(String, String)> = None;
    for line in config.split_inclusive('\n') {
        let trimmed = line.trim_end();
        match &mut skipping {
            Some((host, _)) if trimmed == format!("{END}{host} <<<") => skipping = None,
            Some((_, held)) => held.push_str(line),
            None => {
                let host = trimmed
                    .strip_prefix(BEGIN)
                    .and_then(|rest| rest.strip_suffix(" >>>"));
                match host {
                    Some(host) if matches(host) => {
                        skipping = Some((host.to_owned(), line.to_owned()));
                    }
                    _ => out.push_str(line),
                }
            }
        }
    }
    if let Some((_, held)) = skipping {
        out.push_str(&held);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(host: &str) -> Block {
        Block {
            host: host.into(),
            remote_socket: "/home/r/.local/state/him/run/devbox/forwarded/laptop.sock".into(),
            local_socket: "/run/user/1000/him/gateway/gateway.sock".into(),
        }
    }

    #[test]
    fn the_block_goes_on_top_once_and_leaves_the_rest_as_it_was() {
        let mine = "ServerAliveInterval 60\nHost other\n  User x\n";
        let once = upsert_block(mine, &block("devbox"));
        assert!(once.starts_with("# >>> him remote devbox >>>\n"), "{once}");
        assert!(once.ends_with(mine), "{once}");
        assert!(once.contains("RemoteForward /home/r/.local/state/him/run/devbox/forwarded/laptop.sock /run/user/1000/him/gateway/gateway.sock\n"));
        // The user's global lines after the block still apply to every host.
        assert!(once.contains("Host *\n# <<< him remote devbox <<<\nServerAliveInterval 60"));
        assert_eq!(upsert_block(&once, &block("devbox")), once, "idempotent");
        let two = upsert_block(&once, &block("vm"));
        assert_eq!(two.matches("# >>> him remote").count(), 2);
        assert_eq!(remove_blocks(&two), mine);
    }

    #[test]
    fn only_a_plain_absolute_path_of_safe_characters_goes_into_the_block() {
        for fine in [
            "/home/r/.local/state/him/run/devbox/forwarded",
            "/home/Jürgen Weiß/.local/state/him/run/dev-box_1/forwarded",
            "/srv/u+x@y,z/f",
        ] {
            assert_eq!(
                check_socket_path(Path::new(fine), "the path"),
                Ok(()),
                "{fine}"
            );
        }
        for (bad, why) in [
            ("/home/r/f\n  ProxyCommand touch /tmp/x\nHost *\n#", r"'\n'"),
            ("/home/%u/f", "'%'"),
            ("/home/${USER}/f", "'$'"),
            ("/home/r/f:/tmp/x", "':'"),
            ("/home/r/\"f", r#"'"'"#),
            ("/home/r/f\\", r"'\\'"),
            ("/home/r/#f", "'#'"),
            ("/home/r/\u{202E}f", r"'\u{202e}'"),
            ("home/r/f", "not an absolute path"),
            ("/home/r/../f", "not a plain path"),
            ("/home//f", "not a plain path"),
            ("/home/r/f/", "not a plain path"),
        ] {
            let err = check_socket_path(Path::new(bad), "the path").expect_err(bad);
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert_eq!(check_host("devbox"), Ok(()));
        assert_eq!(check_host("ada@dev-box.example"), Ok(()));
        for bad in [
            "",
            "-oProxyCommand=x",
            "dev box",
            "dev\nbox",
            "a#b",
            "%h",
            "\"x\"",
        ] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_path_with_a_space_is_one_quoted_word() {
        let block = Block {
            host: "devbox".into(),
            remote_socket: "/home/a b/forwarded/laptop.sock".into(),
            local_socket: "/run/user/1000/him/gateway/gateway.sock".into(),
        };
        assert!(block.render().contains(
            "  RemoteForward \"/home/a b/forwarded/laptop.sock\" /run/user/1000/him/gateway/gateway.sock\n"
        ));
        assert_eq!(
            block.ssh_command(),
            "ssh -R '/home/a b/forwarded/laptop.sock:/run/user/1000/him/gateway/gateway.sock' devbox"
        );
    }

    #[test]
    fn a_block_without_its_end_line_is_left_with_everything_after_it() {
        let cut = "Host mine\n  User me\n# >>> him remote devbox >>>\nHost devbox\n  RemoteForward a b\nHost other\n  User x\n";
        assert_eq!(remove_blocks(cut), cut, "nothing of the person's lost");
    }

    #[test]
    fn a_block_of_another_host_is_kept_when_one_is_replaced() {
        let two = upsert_block(&upsert_block("", &block("a")), &block("b"));
        let again = upsert_block(&two, &block("a"));
        assert_eq!(again.matches("# >>> him remote a >>>").count(), 1);
        assert_eq!(again.matches("# >>> him remote b >>>").count(), 1);
    }
}
