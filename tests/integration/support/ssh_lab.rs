//! Two machines on one: a "laptop" user whose browser host runs here, and a "remote"
//! account that can reach the laptop only through OpenSSH. The remote side is a second
//! local user inside its own network namespace (a veth pair; sshd on the pair's private
//! address, with a host key and a client key made for the test), its own mount namespace
//! (the laptop user's home and runtime directory are covered by empty tmpfs mounts there)
//! and its own UTS namespace (another host name, for the panel's label). Agents on the
//! remote side run inside those namespaces, entered with nsenter as the remote user.
//!
//! Needs root, sshd, ssh, ip, unshare and nsenter; [`Lab::new`] skips with a message when
//! one is missing, and fails instead under `HIM_E2E=1`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::fresh_user::{FreshUser, fresh_user};

pub const REMOTE_ALIAS: &str = "devbox";

pub struct Lab {
    pub laptop: FreshUser,
    pub remote: FreshUser,
    /// The remote machine's host name (its UTS namespace's).
    pub remote_hostname: String,
    /// The laptop's runtime directory (`/run/user/<uid>/him`).
    pub laptop_runtime: PathBuf,
    netns: String,
    /// The laptop's end of the pair that carries the network between the two machines.
    veth_here: String,
    sshd: tokio::process::Child,
    sshd_pid: u32,
    /// Keys and the sshd configuration, root's only.
    _keys: tempfile::TempDir,
    /// This suite's turn among the heavy ones, for as long as the lab stands.
    _alone: super::HeavySuite,
}

fn run(program: &str, args: &[&str]) {
    let status = std::process::Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    assert!(status.success(), "{program} {args:?} failed: {status}");
}

impl Lab {
    pub async fn new() -> Option<Lab> {
        let alone = super::heavy_suite("ssh lab");
        for tool in [
            "/usr/sbin/sshd",
            "/usr/bin/ssh",
            "/usr/bin/ssh-keygen",
            "/usr/sbin/ip",
            "/usr/bin/unshare",
            "/usr/bin/nsenter",
            "/usr/bin/python3",
        ] {
            if !super::require(
                Path::new(tool).exists(),
                &format!("{tool} is missing"),
                "apt-get install openssh-server openssh-client iproute2 util-linux python3",
            ) {
                return None;
            }
        }
        let mut laptop = fresh_user()?;
        let remote = fresh_user()?;
        let laptop_runtime = laptop.log_in().join("him");
        // A user without a password is locked, and sshd refuses a locked account without
        // PAM; `*` is no password, but not locked.
        run("/usr/sbin/usermod", &["-p", "*", &remote.name]);

        let tag = &him::platform::random::question_id().expect("random")[..6];
        let net = u8::from_str_radix(&tag[..2], 16).expect("hex");
        let netns = format!("himt{tag}");
        let (veth_here, veth_there) = (format!("hv{tag}a"), format!("hv{tag}b"));
        let (here, there) = (format!("10.234.{net}.1"), format!("10.234.{net}.2"));
        run("/usr/sbin/ip", &["netns", "add", &netns]);
        run(
            "/usr/sbin/ip",
            &[
                "link",
                "add",
                &veth_here,
                "type",
                "veth",
                "peer",
                "name",
                &veth_there,
            ],
        );
        run(
            "/usr/sbin/ip",
            &["link", "set", &veth_there, "netns", &netns],
        );
        run(
            "/usr/sbin/ip",
            &["addr", "add", &format!("{here}/24"), "dev", &veth_here],
        );
        run("/usr/sbin/ip", &["link", "set", &veth_here, "up"]);
        let there_cidr = format!("{there}/24");
        for args in [
            vec!["addr", "add", &there_cidr, "dev", &veth_there],
            vec!["link", "set", &veth_there, "up"],
            vec!["link", "set", "lo", "up"],
        ] {
            let mut all = vec!["netns", "exec", &netns, "/usr/sbin/ip"];
            all.extend(args.iter().copied());
            run("/usr/sbin/ip", &all);
        }

        let keys = tempfile::Builder::new()
            .prefix("him-sshd-")
            .tempdir()
            .expect("temp dir");
        let host_key = keys.path().join("host_key");
        run(
            "/usr/bin/ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", path_str(&host_key)],
        );
        let remote_ssh = remote.home.join(".ssh");
        std::fs::create_dir_all(&remote_ssh).expect("remote ~/.ssh");
        let laptop_ssh = laptop.home.join(".ssh");
        std::fs::create_dir_all(&laptop_ssh).expect("laptop ~/.ssh");
        let client_key = laptop_ssh.join("id_him_test");
        run(
            "/usr/bin/ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", path_str(&client_key)],
        );
        std::fs::copy(
            client_key.with_extension("pub"),
            remote_ssh.join("authorized_keys"),
        )
        .expect("authorized_keys");
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub")).expect("host key");
        std::fs::write(
            laptop_ssh.join("known_hosts_him_test"),
            format!("{there} {host_pub}"),
        )
        .expect("known_hosts");
        std::fs::write(
            laptop_ssh.join("config"),
            format!(
                "Host {REMOTE_ALIAS}\n  HostName {there}\n  User {}\n  IdentityFile ~/.ssh/id_him_test\n  \
                 UserKnownHostsFile ~/.ssh/known_hosts_him_test\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
                remote.name
            ),
        )
        .expect("ssh config");
        for (user, dir) in [(&laptop, &laptop_ssh), (&remote, &remote_ssh)] {
            chown_tree(dir, user.uid, user.gid);
        }
        let sshd_config = keys.path().join("sshd_config");
        // Debian's defaults otherwise: StreamLocalBindUnlink no, so a stale socket blocks a
        // bind, as on a shared dev box whose sshd the user cannot change; X11Forwarding yes,
        // as Debian's sshd_config says.
        std::fs::write(
            &sshd_config,
            format!(
                "ListenAddress {there}\nHostKey {}\nPidFile none\nUsePAM no\nStrictModes no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nAllowUsers {}\n\
                 LogLevel VERBOSE\nX11Forwarding yes\n",
                host_key.display(),
                remote.name
            ),
        )
        .expect("sshd_config");
        std::fs::create_dir_all("/run/sshd").expect("privilege separation directory");
        let remote_hostname = format!("devbox-{tag}");
        // The laptop's home and runtime directory do not exist on the remote machine.
        let laptop_base = laptop.home.parent().expect("base").to_owned();
        let script = format!(
            "hostname {remote_hostname} && mount -t tmpfs none {} && mount -t tmpfs none {} && exec /usr/sbin/sshd -D -e -f {}",
            laptop_base.display(),
            laptop_runtime.parent().expect("/run/user/<uid>").display(),
            sshd_config.display()
        );
        let mut sshd = tokio::process::Command::new("/usr/sbin/ip")
            .args([
                "netns",
                "exec",
                &netns,
                "/usr/bin/unshare",
                "--mount",
                "--uts",
                "/bin/sh",
                "-c",
                &script,
            ])
            .stdin(Stdio::null())
            .stderr(if std::env::var_os("HIM_TEST_SSHD_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true)
            .spawn()
            .expect("start sshd");
        let sshd_pid = sshd.id().expect("sshd pid");
        let lab = Lab {
            _alone: alone,
            laptop,
            remote,
            remote_hostname,
            laptop_runtime,
            netns,
            veth_here: veth_here.clone(),
            sshd_pid,
            sshd: {
                // Until sshd listens: the port answers with its banner.
                let deadline = tokio::time::Instant::now() + super::PATIENCE;
                loop {
                    let probe = std::process::Command::new("/usr/sbin/ip")
                        .args(["netns", "exec", &format!("himt{tag}"), "/usr/bin/python3", "-c",
                               &format!("import socket; socket.create_connection(('{there}', 22), 1).recv(4)")])
                        .stderr(Stdio::null())
                        .status()
                        .expect("probe sshd");
                    if probe.success() {
                        break;
                    }
                    if let Ok(Some(status)) = sshd.try_wait() {
                        panic!("sshd exited: {status}");
                    }
                    assert!(tokio::time::Instant::now() < deadline, "sshd did not start");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                sshd
            },
            _keys: keys,
        };
        Some(lab)
    }

    /// A command run on the remote machine as the remote user, with exactly `env`.
    pub fn on_remote(&self, program: &Path, env: &[(&str, String)]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("/usr/bin/nsenter");
        command
            .args([
                "--target",
                &self.sshd_pid.to_string(),
                "--net",
                "--mount",
                "--uts",
            ])
            .args([
                "--setuid",
                &self.remote.uid.to_string(),
                "--setgid",
                &self.remote.gid.to_string(),
            ])
            .arg(format!("--wd={}", self.remote.home.display()))
            .arg("--")
            .arg(program)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .kill_on_drop(true);
        command
    }

    /// What an MCP client with a stripped environment gives `him serve` on the remote.
    pub fn remote_env(&self, extra: &[(&str, &str)]) -> Vec<(&'static str, String)> {
        let mut env = self.remote.client_env();
        for (k, v) in extra {
            let k: &'static str = Box::leak(k.to_string().into_boxed_str());
            env.push((k, v.to_string()));
        }
        env
    }

    /// `ssh <args>` as the laptop user, with its own environment and configuration.
    pub fn ssh(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("/usr/bin/ssh");
        command
            .args(args)
            .env_clear()
            .envs(
                self.laptop
                    .client_env()
                    .iter()
                    .map(|(k, v)| (*k, v.as_str())),
            )
            .current_dir(&self.laptop.home)
            .uid(self.laptop.uid)
            .gid(self.laptop.gid)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// `him <args>` as the laptop user, as typed in its terminal.
    pub async fn him_on_laptop(&self, args: &[&str]) -> std::process::Output {
        let mut env = self.laptop.browser_env();
        env.retain(|(k, _)| *k != "HIM_LOG");
        // A gateway that `him remote` starts leaves soon after the browser, as the test ends.
        env.push(("HIM_RECONNECT_GRACE_MS", "3000".into()));
        self.laptop
            .command(&env)
            .args(args)
            .output()
            .await
            .expect("run him on the laptop")
    }

    /// Opens the SSH connection that carries the forward, as `ssh devbox` would, in the
    /// background (the ControlMaster the block sets up; it keeps no stderr, so whether the
    /// forward was bound is read on the remote: [`Lab::live_forwards`]).
    pub async fn connect(&self) {
        let status = self
            .ssh(&["-f", "-N", REMOTE_ALIAS])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .expect("ssh -f -N");
        assert!(
            status.success(),
            "ssh -f -N {REMOTE_ALIAS} failed: {status}"
        );
    }

    /// `ssh devbox <command>` to its end, as the laptop user: a session (which runs the
    /// remote's `~/.ssh/rc`); the first one becomes the master connection.
    pub async fn session(&self, command: &[&str]) -> std::process::Output {
        let mut args = vec![REMOTE_ALIAS];
        args.extend_from_slice(command);
        self.ssh(&args)
            .output()
            .await
            .expect("ssh devbox <command>")
    }

    /// Ends the master connection cleanly (`ssh -O exit`), and waits until it is gone.
    pub async fn exit_connection(&self) {
        let status = self
            .ssh(&["-O", "exit", REMOTE_ALIAS])
            .stderr(Stdio::null())
            .status()
            .await
            .expect("ssh -O exit");
        assert!(status.success(), "ssh -O exit: {status}");
        let deadline = tokio::time::Instant::now() + super::PATIENCE;
        while self.master_pid().await.is_some() {
            assert!(tokio::time::Instant::now() < deadline, "the master stayed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The remote user's `~/.ssh/rc`.
    pub fn remote_rc(&self) -> PathBuf {
        self.remote.home.join(".ssh/rc")
    }

    /// Writes a file of the remote user's, owned by them.
    pub fn write_remote_file(&self, path: &Path, text: &str) {
        std::fs::write(path, text).expect("write a remote file");
        std::os::unix::fs::chown(path, Some(self.remote.uid), Some(self.remote.gid))
            .expect("chown");
    }

    /// The forwarded sockets that accept a connection now, as the remote user finds them.
    pub async fn live_forwards(&self) -> Vec<String> {
        let mut live = Vec::new();
        for name in self.forwarded_sockets().await {
            if self
                .remote_can_connect(&self.forwarded_dir().join(&name))
                .await
            {
                live.push(name);
            }
        }
        live
    }

    /// The master connection's pid, from `ssh -O check`.
    pub async fn master_pid(&self) -> Option<u32> {
        let output = self
            .ssh(&["-O", "check", REMOTE_ALIAS])
            .output()
            .await
            .expect("ssh -O check");
        let text = String::from_utf8_lossy(&output.stderr);
        text.split("pid=").nth(1)?.split(')').next()?.parse().ok()
    }

    /// The network under the SSH connection goes away: its process dies without a word,
    /// and the remote sshd sees the TCP connection end.
    pub async fn drop_connection(&self) {
        let pid = self.master_pid().await.expect("a master connection");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let deadline = tokio::time::Instant::now() + super::PATIENCE;
        while self.master_pid().await.is_some() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the master did not die"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The network between the machines goes away without a word, as when a laptop sleeps or
    /// leaves the Wi-Fi: the link goes down, so nothing gets through either way, and neither
    /// end's TCP hears a FIN or a reset.
    pub fn cut_network(&self) {
        run(
            "/usr/sbin/ip",
            &["link", "set", "dev", &self.veth_here, "down"],
        );
    }

    /// The network comes back (the connections cut off are still there, unless one end gave
    /// up meanwhile).
    pub fn restore_network(&self) {
        run(
            "/usr/sbin/ip",
            &["link", "set", "dev", &self.veth_here, "up"],
        );
    }

    /// The remote user's forwarded folder, as `him remote` made it there.
    pub fn forwarded_dir(&self) -> PathBuf {
        self.remote
            .home
            .join(".local/state/him/run")
            .join(&self.remote_hostname)
            .join("forwarded")
    }

    /// The sockets in the remote forwarded folder, as the remote user sees them.
    pub async fn forwarded_sockets(&self) -> Vec<String> {
        let output = self
            .on_remote(Path::new("/bin/ls"), &[])
            .arg(self.forwarded_dir())
            .output()
            .await
            .expect("ls");
        let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        names.sort();
        names
    }

    /// Whether the remote user, on the remote machine, can connect to `path`.
    pub async fn remote_can_connect(&self, path: &Path) -> bool {
        self.on_remote(Path::new("/usr/bin/python3"), &[])
            .args([
                "-c",
                "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])",
            ])
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .await
            .expect("python3 on the remote")
            .success()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // A test that cut the network and failed: back up, so the connection and sshd's
        // session process for it end cleanly.
        let _ = std::process::Command::new("/usr/sbin/ip")
            .args(["link", "set", "dev", &self.veth_here, "up"])
            .status();
        // The control path named outright: a test may have run `him uninstall`, which takes
        // the block that set it out of the configuration.
        let control = format!("ControlPath={}/.ssh/him-%C", self.laptop.home.display());
        let _ = std::process::Command::new("/usr/bin/ssh")
            .args(["-o", &control, "-O", "exit", REMOTE_ALIAS])
            .env_clear()
            .env("HOME", &self.laptop.home)
            .uid(self.laptop.uid)
            .gid(self.laptop.gid)
            .stderr(Stdio::null())
            .status();
        let _ = self.sshd.start_kill();
        // The gateway leaves once no browser has run for its grace; the user cannot be
        // removed while it runs.
        let gateway = him::wire::runtime::gateway_socket(&self.laptop_runtime);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while gateway.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::process::Command::new("/usr/sbin/ip")
            .args(["netns", "del", &self.netns])
            .status();
    }
}

use std::os::unix::process::CommandExt as _;

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn chown_tree(dir: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown");
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        std::os::unix::fs::chown(entry.path(), Some(uid), Some(gid)).expect("chown");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
}
