//! Hostile input, generated: ten thousand websocket frames and ten thousand paths and queries,
//! from a fixed seed so a failure replays. The server never panics or hangs up on them: every
//! frame is answered with an error frame on a socket that stays open, every request with a
//! status below 500 (or oEmbed's 501 for a format it does not speak).

mod common;

use common::socket::{connect, receive, send_raw};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

const CASES: usize = 10_000;

/// Values a field might hold: right types, wrong types, empty, huge numbers, odd text.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::from),
        prop::collection::vec(".{0,8}".prop_map(Value::from), 0..4).prop_map(Value::from),
    ]
}

/// Frames that look like the protocol's, with something wrong: a real scenario with a variant
/// no scenario has, or a made-up scenario; a wrong version; an unknown type; wrong field types;
/// or text that is not JSON at all (truncated, binary-looking, empty).
fn hostile_frame() -> impl Strategy<Value = String> {
    let scenarios = prop::sample::select(vec![
        "isolation/write-skew",
        "locks/fencing",
        "outbox/chaos",
        "idempotency/crash",
        "",
        "../../etc/passwd",
        "isolation/",
    ]);
    let kinds = prop::sample::select(vec!["start", "next", "cancel", "stop", "START", ""]);
    let structured = (
        prop_oneof![Just(json!(1)), any_value()],
        kinds,
        scenarios,
        "[a-z-]{0,12}|.{0,20}",
        prop_oneof![Just(json!("auto")), Just(json!("step")), any_value()],
        prop::option::of(any_value()),
    )
        .prop_map(|(v, kind, scenario, variant, mode, extra)| {
            let mut frame = json!({
                "v": v,
                "type": kind,
                "scenario": scenario,
                // Never a real variant: no generated frame may start a run.
                "variant": format!("~{variant}"),
                "mode": mode,
            });
            if let Some(extra) = extra {
                frame["extra"] = extra;
            }
            frame.to_string()
        });
    let structured = structured.boxed();
    prop_oneof![
        3 => structured.clone(),
        // Cut at a character boundary near the middle: JSON that ends too soon.
        1 => structured.prop_map(|f| f.chars().take(f.chars().count() / 2).collect::<String>()),
        1 => ".{0,200}",
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// Paths and queries a crawler, a fuzzer or a typo might send.
fn hostile_path() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        Just("lab".to_owned()),
        Just("runs".to_owned()),
        Just("embed".to_owned()),
        Just("api".to_owned()),
        Just("oembed".to_owned()),
        Just("isolation".to_owned()),
        Just("write-skew.svg".to_owned()),
        "[a-zA-Z0-9_.~-]{0,16}",
        "%[0-9A-F]{2}[a-z]{0,4}",
        Just("..".to_owned()),
    ];
    let query = prop::option::of(prop::collection::vec(
        (
            prop::sample::select(vec![
                "url",
                "variant",
                "maxwidth",
                "maxheight",
                "format",
                "autoplay",
                "x",
            ]),
            "[a-zA-Z0-9:/%._-]{0,30}",
        ),
        0..4,
    ));
    (prop::collection::vec(segment, 0..5), query).prop_map(|(segments, query)| {
        let mut path = format!("/{}", segments.join("/"));
        if let Some(pairs) = query {
            let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            path.push('?');
            path.push_str(&pairs.join("&"));
        }
        path
    })
}

fn generate<T: std::fmt::Debug>(strategy: impl Strategy<Value = T>) -> Vec<T> {
    let mut runner = TestRunner::deterministic();
    (0..CASES)
        .map(|_| strategy.new_tree(&mut runner).expect("a case").current())
        .collect()
}

#[tokio::test]
async fn ten_thousand_hostile_frames_each_get_an_error_frame_on_an_open_socket() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let mut socket = connect(address).await;
    let known = [
        "bad_frame",
        "bad_version",
        "unknown_scenario",
        "unknown_variant",
        "no_run",
        "not_step_mode",
        "not_steppable",
        "service_down",
    ];
    for (n, frame) in generate(hostile_frame()).into_iter().enumerate() {
        send_raw(&mut socket, &frame).await;
        let reply = receive(&mut socket).await;
        let code = reply["code"].as_str().unwrap_or_default();
        assert!(
            reply["type"] == "error"
                && known.contains(&code)
                && reply["message"].as_str().is_some_and(|m| !m.is_empty()),
            "frame {n} {frame:?} got {reply}"
        );
    }
}

#[tokio::test]
async fn ten_thousand_hostile_paths_are_answered_below_500() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let client = reqwest::Client::new();
    for (n, path) in generate(hostile_path()).into_iter().enumerate() {
        let Ok(url) = reqwest::Url::parse(&format!("http://{address}{path}")) else {
            continue;
        };
        // oEmbed's own answer to a format it does not speak is 501 (the oEmbed 1.0 spec).
        let oembed = url.path() == "/oembed";
        let status = client.get(url).send().await.expect("racelab answers").status();
        assert!(
            status.as_u16() < 500 || (oembed && status.as_u16() == 501),
            "request {n} {path:?} answered {status}"
        );
    }
}
