//! Stamps the build with the commit it was built from: a recording says which racelab made it
//! (`RACELAB_COMMIT`, read by `recording::racelab_build`; absent outside a git checkout).

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|commit| !commit.is_empty());
    if let Some(commit) = commit {
        println!("cargo:rustc-env=RACELAB_COMMIT={commit}");
    }
    // A new commit moves the branch's ref; a checkout of another branch moves HEAD.
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
}
