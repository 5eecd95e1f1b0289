//! `GET /metrics` on the real router: every line reads as Prometheus's text format (a strict
//! reader below: HELP and TYPE before a metric's samples, names and labels well formed, numbers,
//! histograms cumulative up to `+Inf` = `_count`), and the counters move with a run played over
//! the websocket.

mod common;

use std::collections::BTreeMap;

/// Every sample, by its name with labels (`racelab_runs_started_total{lab="isolation"}`), after
/// checking the text line by line.
fn read(text: &str) -> BTreeMap<String, f64> {
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert!(
                name_ok(name) && ["counter", "gauge", "histogram"].contains(&kind),
                "{line}"
            );
            assert!(
                typed.insert(name.to_owned(), kind.to_owned()).is_none(),
                "TYPE twice: {line}"
            );
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#') && !line.is_empty(), "a stray line: {line:?}");
        let (series, value) = line.rsplit_once(' ').expect("a sample and its value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number: {line}"));
        let name = series.split('{').next().unwrap_or_default();
        assert!(name_ok(name), "{line}");
        if let Some(labels) = series.strip_prefix(name)
            && !labels.is_empty()
        {
            let inner = labels.strip_prefix('{').and_then(|l| l.strip_suffix('}')).expect(line);
            for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                let (key, value) = pair.split_once("=\"").expect(line);
                assert!(name_ok(key) && !value.trim_end_matches('"').contains('"'), "{line}");
            }
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| typed.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(typed.contains_key(family), "a sample before its TYPE: {line}");
        samples.insert(series.to_owned(), value);
    }
    // Histograms: buckets never go down, and +Inf is the count.
    for (family, _) in typed.iter().filter(|(_, k)| *k == "histogram") {
        let buckets: Vec<f64> = samples
            .iter()
            .filter(|(s, _)| s.starts_with(&format!("{family}_bucket{{")))
            .map(|(_, v)| *v)
            .collect();
        let infinite = samples[&format!("{family}_bucket{{le=\"+Inf\"}}")];
        assert_eq!(infinite, samples[&format!("{family}_count")], "{family}");
        assert!(buckets.iter().all(|b| *b <= infinite), "{family}: {buckets:?}");
    }
    samples
}

async fn scrape(address: std::net::SocketAddr) -> BTreeMap<String, f64> {
    let (status, kind, body) = common::get(address, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    read(&body)
}

#[tokio::test]
async fn metrics_read_as_prometheus_text_and_move_with_a_run() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let before = scrape(address).await;
    for gauge in [
        "racelab_queue_length",
        "racelab_runs_playing",
        "racelab_sandboxes_alive",
        "racelab_readers_connected",
        "racelab_rooms_open",
    ] {
        assert!(before.contains_key(gauge), "{gauge}: {before:?}");
    }
    assert!(
        before
            .keys()
            .any(|k| k.starts_with("racelab_connections_in_use{server=\"127.0.0.1:5432\",version=\""))
    );
    let count = |m: &BTreeMap<String, f64>, key: &str| m.get(key).copied().unwrap_or(0.0);
    let started = "racelab_runs_started_total{lab=\"isolation\"}";
    let completed = "racelab_runs_finished_total{lab=\"isolation\",outcome=\"completed\"}";

    let mut ws = common::socket::connect(address).await;
    common::socket::start(&mut ws, "isolation/write-skew", "serializable", "auto").await;
    common::socket::receive_until(&mut ws, |f| common::socket::is_type(f, "done")).await;
    let after = scrape(address).await;
    assert_eq!(count(&after, started), count(&before, started) + 1.0);
    assert_eq!(count(&after, completed), count(&before, completed) + 1.0);
    assert_eq!(
        count(&after, "racelab_run_duration_seconds_count"),
        count(&before, "racelab_run_duration_seconds_count") + 1.0
    );
    assert!(
        count(&after, "racelab_readers_connected") >= 1.0,
        "this test's socket is open"
    );
}

#[test]
fn the_reader_refuses_what_prometheus_would() {
    let refuses = |text: &str| std::panic::catch_unwind(|| read(text)).is_err();
    assert!(refuses("x 1\n"), "a sample without its TYPE");
    assert!(refuses("# TYPE x gauge\nx one\n"), "not a number");
    assert!(refuses("# TYPE x gauge\n9x 1\n"), "a bad name");
    assert!(!refuses("# HELP x a gauge\n# TYPE x gauge\nx{a=\"b\"} 1\n"));
}

#[tokio::test]
async fn metrics_name_mariadbs_version_once_it_answered() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let before = scrape(address).await;
    assert!(
        !before.keys().any(|k| k.starts_with("racelab_mariadb_info")),
        "no version before anything asked MariaDB: {before:?}"
    );
    assert_eq!(before.get("racelab_mariadb_sandboxes_ready"), Some(&0.0));
    let health = common::get_json(address, "/healthz").await;
    let version = health["mariadb"]["detail"].as_str().unwrap_or_default().to_owned();
    assert!(version.starts_with("MariaDB "), "{health}");
    let after = scrape(address).await;
    assert_eq!(
        after.get(&format!("racelab_mariadb_info{{version=\"{version}\"}}")),
        Some(&1.0),
        "{after:?}"
    );
}
