//! A real PostgreSQL server for the tests, started by the tests themselves from Debian's
//! server binaries (`apt-get install postgresql`: `/usr/lib/postgresql/*/bin`, else `initdb`
//! and `postgres` on `PATH`), in a temporary directory, listening on a Unix socket there only
//! (no TCP port). Missing binaries fail the test saying what to install; nothing is skipped.
//!
//! `initdb` refuses to run as root, so as root (CI, containers) the server runs as `nobody`,
//! owning the directory; as anyone else, as that user.
//!
//! [`PgServer::shared`] is one server per test binary, [`PgServer::database`] a fresh database
//! per test. The server is watched by a small `sh` reading a pipe from this process: when the
//! pipe closes — the server dropped, or this process gone in any way, panic or `kill -9`
//! included — it stops PostgreSQL (`SIGQUIT`: immediate shutdown), waits for it and removes
//! the directory. No server outlives its tests.

#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A PostgreSQL server in a temporary directory, stopped (and the directory removed) when
/// dropped or when the test process ends.
pub struct PgServer {
    /// The temporary directory: `data/`, the socket, `server.log`.
    dir: PathBuf,
    /// The `sh` watching the server; it stops the server when `pipe` closes.
    watchdog: Child,
    pipe: Option<ChildStdin>,
    /// Its port (the socket's name; also on TCP with TLS).
    port: u16,
}

/// What the watchdog runs: `$1` the server's bin directory, `$2` the directory, `$3` the
/// TCP port to listen on over TLS (empty: none).
const WATCHDOG: &str = r#"
tcp="-c listen_addresses="
if [ -n "$3" ]; then
    tcp="-c listen_addresses=127.0.0.1 -p $3 -c ssl=on -c ssl_cert_file=$2/server.crt \
        -c ssl_key_file=$2/server.key"
fi
"$1/postgres" -D "$2/data" -k "$2" $tcp -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
    -c shared_buffers=32MB >"$2/server.log" 2>&1 &
pid=$!
read -r line
kill -QUIT "$pid" 2>/dev/null
wait "$pid"
rm -rf "$2"
"#;

/// Makes, in the current directory, a certificate authority (`ca.crt`) and the server's
/// certificate it signs (`server.crt`, `server.key`, for `127.0.0.1` and `localhost`).
const CERTIFICATES: &str = r#"
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout ca.key -out ca.crt -subj /CN=acp-test-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.crt
chmod 600 server.key ca.key
chmod 644 ca.crt
"#;

impl PgServer {
    /// The server of this test binary, started on first use.
    pub fn shared() -> &'static PgServer {
        static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
        match SERVER.get_or_init(PgServer::start) {
            Ok(server) => server,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts a server of its own (stopped when dropped).
    pub fn start() -> Result<PgServer, String> {
        PgServer::start_with(None)
    }

    /// Starts a server of its own that also listens on `127.0.0.1:port` with TLS, its
    /// certificate (for `127.0.0.1` and `localhost`) signed by a certificate authority made
    /// for it: [`ca`](Self::ca) is that authority's certificate. Needs `openssl`.
    pub fn start_tls() -> Result<(PgServer, u16), String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        Ok((PgServer::start_with(Some(port))?, port))
    }

    /// The certificate authority of a [`start_tls`](Self::start_tls) server (PEM).
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    fn start_with(tls_port: Option<u16>) -> Result<PgServer, String> {
        let bin = server_binaries()?;
        let owner = Owner::for_this_process()?;
        let dir = tempfile::Builder::new()
            .prefix("acp-pg-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?
            .keep();
        owner.give(&dir)?;
        let initdb = owner
            .command(&bin.join("initdb"), &dir)
            .arg("-D")
            .arg(dir.join("data"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .map_err(|e| format!("cannot run {}/initdb: {e}", bin.display()))?;
        if !initdb.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&initdb.stdout),
                String::from_utf8_lossy(&initdb.stderr)
            ));
        }
        if tls_port.is_some() {
            let made = owner
                .command(Path::new("/bin/sh"), &dir)
                .args(["-c", CERTIFICATES])
                .output()
                .map_err(|e| format!("cannot run openssl: {e}"))?;
            if !made.status.success() {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(format!(
                    "making the test certificates failed (is `openssl` installed?): {}",
                    String::from_utf8_lossy(&made.stderr)
                ));
            }
        }
        let watchdog = owner
            .command(Path::new("/bin/sh"), &dir)
            // A process group of its own: a signal to the tests' group (Ctrl-C, a timeout
            // killing the group) leaves it to stop the server and clean up.
            .process_group(0)
            .args(["-c", WATCHDOG, "watchdog"])
            .arg(&bin)
            .arg(&dir)
            .arg(tls_port.map(|p| p.to_string()).unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let mut server = PgServer {
            dir,
            pipe: None,
            watchdog,
            port: tls_port.unwrap_or(5432),
        };
        server.pipe = server.watchdog.stdin.take();
        server.wait_ready(&bin)?;
        Ok(server)
    }

    /// Waits until the server accepts connections (`pg_isready`), or fails with its log.
    fn wait_ready(&mut self, bin: &Path) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string()])
                .args(["-U", "postgres", "-d", "postgres", "-q"])
                .status()
                .map_err(|e| format!("cannot run pg_isready: {e}"))?;
            if ready.success() {
                return Ok(());
            }
            let log = || std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            if Instant::now() > deadline {
                return Err(format!("PostgreSQL did not start within 60 s:\n{}", log()));
            }
            if self.watchdog.try_wait().ok().flatten().is_some() {
                return Err(format!("PostgreSQL did not start:\n{}", log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The directory of the server's Unix socket (its `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://postgres@/{name}?host={}&port={}",
            self.dir.display(),
            self.port
        )
    }

    /// A new, empty database of its own: its URL.
    pub async fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "acp_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .expect("connecting to the test server");
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("creating a test database");
        drop(client);
        let _ = connection.await;
        self.url(&name)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // EOF for the watchdog: it stops the server, waits for it, removes the directory.
        drop(self.pipe.take());
        let _ = self.watchdog.wait();
    }
}

/// The directory of PostgreSQL's server binaries: the newest `/usr/lib/postgresql/*/bin`
/// (Debian's), else the one of `initdb` on `PATH`.
fn server_binaries() -> Result<PathBuf, String> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| has_server(bin))
        .collect();
    debian.sort();
    if let Some((_, bin)) = debian.pop() {
        return Ok(bin);
    }
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .find(|dir| has_server(dir))
        .ok_or_else(|| {
            "the PostgreSQL tests need PostgreSQL's server binaries (initdb, postgres), found \
         neither in /usr/lib/postgresql/*/bin nor on PATH: install them with \
         `apt-get install postgresql` (Debian, Ubuntu)"
                .to_owned()
        })
}

/// Who runs the server: `nobody` when this process is root (initdb refuses root), else this
/// process's user.
enum Owner {
    Me,
    Nobody { uid: u32, gid: u32 },
}

impl Owner {
    fn for_this_process() -> Result<Owner, String> {
        if !rustix::process::getuid().is_root() {
            return Ok(Owner::Me);
        }
        let mut passwd = String::new();
        std::fs::File::open("/etc/passwd")
            .and_then(|mut f| f.read_to_string(&mut passwd))
            .map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
        passwd
            .lines()
            .find_map(|line| {
                let fields: Vec<&str> = line.split(':').collect();
                (fields.first() == Some(&"nobody") && fields.len() > 3).then(|| {
                    Some(Owner::Nobody {
                        uid: fields[2].parse().ok()?,
                        gid: fields[3].parse().ok()?,
                    })
                })?
            })
            .ok_or_else(|| {
                "running as root, and there is no user `nobody` to run PostgreSQL as (initdb \
                 refuses root)"
                    .to_owned()
            })
    }

    /// Makes `dir` this owner's.
    fn give(&self, dir: &Path) -> Result<(), String> {
        match *self {
            Owner::Me => Ok(()),
            Owner::Nobody { uid, gid } => std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot give {} to nobody: {e}", dir.display())),
        }
    }

    /// `program`, to run as this owner in `dir`.
    fn command(&self, program: &Path, dir: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(dir);
        if let Owner::Nobody { uid, gid } = *self {
            command.uid(uid).gid(gid);
        }
        command
    }
}
