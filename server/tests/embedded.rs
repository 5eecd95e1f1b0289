//! `racelab serve --embedded`: private PostgreSQL, Redis and MariaDB beside the system ones
//! (which keep running), the tutorial's run through them over the websocket (on PostgreSQL and on
//! MariaDB), and nothing of them left once racelab stops — or, when racelab is killed, once the
//! next one starts.

mod common;

use common::socket::{connect, is_type, receive_until, send};
use serde_json::json;
use sqlx::Connection;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// A racelab started with `--embedded`, and the log lines it printed until it was ready.
struct Racelab {
    child: Child,
    address: SocketAddr,
    startup: Vec<String>,
}

/// Starts `racelab serve --embedded` with its private services under `base`, as a reader would
/// with none of the services configured, and waits until it says it is ready.
async fn start_embedded(base: &Path) -> Racelab {
    let port = racelab::embedded::process::free_port().expect("a free port");
    let mut child = Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(["serve", "--embedded"])
        .env("PORT", port.to_string())
        .env("RACELAB_BIND", "127.0.0.1")
        .env("RACELAB_EMBEDDED_DIR", base)
        .env("RACELAB_DIST", "no-such-dist")
        .env("RACELAB_LOG", "info,sqlx=error")
        // A broker whose binary is missing: racelab starts without it and says why.
        .env("RACELAB_BROKER_BINARY", "/nonexistent/noida-db")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("KAFKA_BROKERS")
        .env_remove("MARIADB_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("racelab starts");
    let startup = match common::until_ready(&mut child).await {
        Ok(said) => said,
        Err(said) => panic!("racelab never became ready; it said:\n{}", said.join("\n")),
    };
    Racelab {
        child,
        address: SocketAddr::from(([127, 0, 0, 1], port)),
        startup,
    }
}

impl Racelab {
    /// The port its startup log gives for `service` ("PostgreSQL: private (…), on 127.0.0.1:N").
    fn private_port(&self, service: &str) -> u16 {
        let line = self
            .startup
            .iter()
            .find(|l| l.contains(&format!("{service}: private")))
            .unwrap_or_else(|| panic!("no private {service} in the log:\n{}", self.startup.join("\n")));
        let after = &line[line.find("127.0.0.1:").expect("an address") + "127.0.0.1:".len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().expect("a port")
    }

    fn signal(&self, signal: i32) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY: kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    async fn exited(mut self) -> std::process::ExitStatus {
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("racelab exits in time")
            .expect("exit status")
    }
}

/// The instance directories under `base` (one per racelab that has not cleaned up).
fn instances(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default()
}

/// The pids the private services wrote under `instance`.
fn service_pids(instance: &Path) -> Vec<u32> {
    std::fs::read_dir(instance)
        .expect("instance dir")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "pid"))
        .filter_map(|e| {
            std::fs::read_to_string(e.path())
                .ok()?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Whether `pid` is a process that still runs (a zombie waiting for its reaper does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().chars().next());
        !matches!(state, Some(Some('Z' | 'X')))
    })
}

async fn none_running(pids: &[u32]) -> Vec<u32> {
    for _ in 0..100 {
        if pids.iter().all(|p| !running(*p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pids.iter().copied().filter(|p| running(*p)).collect()
}

fn fresh_base(name: &str) -> PathBuf {
    let base = std::env::temp_dir().join(format!("racelab-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    base
}

/// The write skew at SERIALIZABLE on the private MariaDB, over `socket`: InnoDB rolls bob back.
async fn write_skew_on_the_private_mariadb(socket: &mut common::socket::Socket) {
    send(
        socket,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "mariadb-serializable"}),
    )
    .await;
    let frames = receive_until(socket, |f| is_type(f, "done")).await;
    assert_eq!(frames.last().expect("done")["outcome"]["status"], "completed");
    let header = frames
        .iter()
        .find(|f| f["event"]["type"] == "run_started")
        .expect("a header");
    let server = header["event"]["server"].as_str().unwrap_or_default();
    assert!(server.starts_with("MariaDB 10."), "played on {server}");
    assert!(
        frames
            .iter()
            .any(|f| f["event"]["type"] == "error" && f["event"]["code"] == "1213"),
        "bob's 1213"
    );
}

#[tokio::test]
async fn a_private_playground_plays_write_skew_and_leaves_nothing_when_stopped() {
    let base = fresh_base("embedded");
    let racelab = start_embedded(&base).await;
    let (pg, redis) = (racelab.private_port("PostgreSQL"), racelab.private_port("Redis"));
    let mariadb = racelab.private_port("MariaDB");
    assert!(
        pg != 5432 && redis != 6379 && mariadb != 3306,
        "private services on their own ports: {pg}, {redis}, {mariadb}"
    );
    let Ok([instance]) = <[PathBuf; 1]>::try_from(instances(&base)) else {
        panic!("one instance directory under {}", base.display())
    };
    assert!(
        instance.join("postgres/PG_VERSION").exists(),
        "the private cluster's data is in its directory"
    );
    assert!(
        instance.join("mariadb/mysql").is_dir(),
        "the private MariaDB's data is in its directory"
    );
    let pids = service_pids(&instance);
    assert!(pids.len() >= 3, "PostgreSQL, Redis and MariaDB at least: {pids:?}");

    // The missing broker is down with the reason, and the lab that needs it says so.
    let health = common::get_json(racelab.address, "/healthz").await;
    assert_eq!(
        (health["postgres"]["up"].as_bool(), health["redis"]["up"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(health["mariadb"]["up"].as_bool(), Some(true), "{health}");
    assert_eq!(health["kafka"]["up"], false, "{health}");
    let why = health["kafka"]["detail"].as_str().unwrap_or_default();
    assert!(why.contains("cannot start /nonexistent/noida-db"), "{why}");
    let labs = common::get_json(racelab.address, "/api/labs").await;
    let down: Vec<(String, String)> = labs
        .as_array()
        .expect("labs")
        .iter()
        .flat_map(|l| {
            let id = l["id"].as_str().unwrap_or_default().to_owned();
            l["down"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |s| (id.clone(), s.to_string()))
        })
        .collect();
    assert_eq!(down, vec![("outbox".to_owned(), "\"kafka\"".to_owned())]);

    let mut socket = connect(racelab.address).await;
    send(
        &mut socket,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
    )
    .await;
    let frames = receive_until(&mut socket, |f| is_type(f, "done")).await;
    let transcript: Vec<String> = frames
        .iter()
        .filter(|f| f["event"]["type"] == "say")
        .filter_map(|f| f["event"]["line"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(transcript, common::lines(common::WRITE_SKEW_SERIALIZABLE));
    assert_eq!(frames.last().expect("done")["outcome"]["status"], "completed");
    write_skew_on_the_private_mariadb(&mut socket).await;
    // The system services kept running beside the private ones.
    let mut system = sqlx::PgConnection::connect("postgres://postgres@127.0.0.1:5432/postgres")
        .await
        .expect("the system PostgreSQL answers");
    let port: i32 = sqlx::query_scalar("SELECT current_setting('port')::int")
        .fetch_one(&mut system)
        .await
        .expect("the system PostgreSQL answers");
    assert_eq!(port, 5432);
    drop(socket);

    racelab.signal(libc::SIGTERM);
    assert!(racelab.exited().await.success(), "racelab stops cleanly on SIGTERM");
    assert_eq!(
        none_running(&pids).await,
        Vec::<u32>::new(),
        "private services still running"
    );
    assert_eq!(instances(&base), Vec::<PathBuf>::new(), "data directories left");
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn a_killed_racelab_leaves_nothing_the_next_start_does_not_clean_up() {
    let base = fresh_base("killed");
    let racelab = start_embedded(&base).await;
    let Ok([killed]) = <[PathBuf; 1]>::try_from(instances(&base)) else {
        panic!("one instance directory under {}", base.display())
    };
    let pids = service_pids(&killed);
    racelab.signal(libc::SIGKILL);
    racelab.exited().await;
    // Its services die with it (they were started with a parent-death signal)…
    assert_eq!(
        none_running(&pids).await,
        Vec::<u32>::new(),
        "services outlived a killed racelab"
    );
    assert!(killed.exists(), "a killed racelab cannot remove its data itself");

    // …and the next start removes what it left.
    let next = start_embedded(&base).await;
    assert!(!killed.exists(), "the next start removes a killed racelab's data");
    assert!(
        next.startup.iter().any(|l| l.contains("crashed racelabs left behind")),
        "and says so:\n{}",
        next.startup.join("\n")
    );
    next.signal(libc::SIGTERM);
    assert!(next.exited().await.success());
    assert_eq!(instances(&base), Vec::<PathBuf>::new());
    let _ = std::fs::remove_dir_all(&base);
}
