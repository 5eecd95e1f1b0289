//! The playground in Firefox: the same write-skew run the Chromium tests check, driven through
//! Firefox's own Marionette protocol (no geckodriver exists in the registries reachable here).
//! Needs `firefox-esr` (installed by scripts/install-ui-tools.sh) and the app built in `dist/`.

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;
#[path = "browser/marionette.rs"]
mod marionette;

use marionette::Marionette;
use std::process::{Child, Command, Stdio};

/// Firefox with a fresh profile, killed (and its profile removed) however the test ends.
struct Firefox {
    child: Child,
    profile: std::path::PathBuf,
}

impl Drop for Firefox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn start_firefox(port: u16) -> Firefox {
    let program = harness::find_program(&["firefox-esr", "firefox"])
        .expect("Firefox is missing: run scripts/install-ui-tools.sh (it installs firefox-esr)");
    let profile = std::env::temp_dir().join(format!("racelab-firefox-{port}"));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).expect("a profile folder");
    // Marionette on our port; no first-run pages, no updates, no network chatter.
    let prefs = format!(
        "user_pref(\"marionette.port\", {port});\n\
         user_pref(\"browser.shell.checkDefaultBrowser\", false);\n\
         user_pref(\"app.update.enabled\", false);\n\
         user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);\n\
         user_pref(\"network.captive-portal-service.enabled\", false);\n"
    );
    std::fs::write(profile.join("user.js"), prefs).expect("write user.js");
    let child = Command::new(program)
        .args([
            "--headless",
            "--marionette",
            "-no-remote",
            "--window-size=1280,1000",
            "-profile",
        ])
        .arg(&profile)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start Firefox");
    Firefox { child, profile }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_skew_runs_in_firefox() {
    assert!(
        harness::dist().join("index.html").is_file(),
        "build the app first: scripts/test builds it"
    );
    let _slot = common::db_slot().await;
    let address = harness::serve(harness::Readers::Anonymous).await;
    let port = harness::free_port();
    let _firefox = start_firefox(port);
    let mut ff = Marionette::connect(port).await;
    ff.navigate(&format!("http://{address}/lab/isolation/write-skew")).await;
    ff.wait_for(
        "the variant tabs",
        "return document.querySelector('button.rl-variant[data-variant=serializable]')",
    )
    .await;
    ff.script("document.querySelector('button.rl-variant[data-variant=serializable]').click()")
        .await;
    ff.wait_for(
        "the socket to open",
        "const b = document.querySelector('button.rl-run'); return b && !b.disabled",
    )
    .await;
    ff.script("document.querySelector('button.rl-run').click()").await;
    let verdict = ff
        .wait_for(
            "the verdict",
            "const v = document.querySelector('.rl-verdict'); return v && v.dataset.kind",
        )
        .await;
    assert_eq!(verdict, "prevented");
    let sqlstate =
        ff.script("const e = document.querySelector('.rl-card--error[data-lane=bob] .rl-sqlstate'); return e && e.textContent").await;
    assert_eq!(sqlstate, "40001");
    let total = ff
        .script("return document.querySelector('.rl-total[data-table=expenses] .rl-total-actual').textContent")
        .await;
    assert_eq!(total, "$3,000");
    let lanes = ff
        .script("return document.querySelectorAll('.rl-lane-head').length")
        .await;
    assert_eq!(lanes, 2);
    let png = ff.screenshot().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(harness::screenshots().join("firefox-write-skew-serializable.png"), png)
        .expect("save the screenshot");
}
