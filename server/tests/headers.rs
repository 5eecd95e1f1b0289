//! The headers of a public service, on the real router: pages name their own inline scripts by
//! hash in a Content-Security-Policy that allows only racelab's scripts and wasm, refuse to be
//! framed except `/embed/…`, which any host page may frame; every answer says `nosniff` and a
//! referrer policy. (The browser tests run the real app under this policy: a wrong hash stops it.)

mod common;

const THEME: &str = "document.documentElement.dataset.theme = \"light\";";
const LOADER: &str = "\nimport init from \"/app.js\";\nawait init();\n";
/// Their SHA-256s in base64, worked out apart from racelab (Python's hashlib).
const THEME_HASH: &str = "'sha256-8sd7gaUQpl/Wix4sdPxGszfH4u2wQeq2HrKgY5TT1JU='";
const LOADER_HASH: &str = "'sha256-+Ng2RsWDsDBYaxNrcMGeKeHLPsoZJoEOaRtsYOR/RRs='";

async fn headers(address: std::net::SocketAddr, path: &str) -> reqwest::header::HeaderMap {
    let response = reqwest::get(format!("http://{address}{path}")).await.expect(path);
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.headers().clone()
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

#[tokio::test]
async fn pages_allow_only_their_own_scripts_and_only_embeds_may_be_framed() {
    let dist = std::env::temp_dir().join(format!("racelab-headers-{}", std::process::id()));
    let page = format!(
        "<!doctype html><html><head><script>{THEME}</script><script type=\"module\">{LOADER}</script>\
         <script src=\"/app.js\"></script></head><body></body></html>"
    );
    std::fs::create_dir_all(dist.join("embed-app")).expect("a dist directory");
    std::fs::write(dist.join("index.html"), &page).expect("index.html");
    std::fs::write(dist.join("embed-app/index.html"), &page).expect("the embed's index.html");
    let address = common::server_with_dist(&dist).await;

    let catalog = headers(address, "/").await;
    let policy = header(&catalog, "content-security-policy");
    let scripts = policy
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap_or_default();
    assert!(
        scripts.contains(THEME_HASH) && scripts.contains(LOADER_HASH),
        "{policy}"
    );
    assert!(
        scripts.contains("'self'") && scripts.contains("'wasm-unsafe-eval'"),
        "{policy}"
    );
    assert!(
        !scripts.contains("'unsafe-inline'") && !scripts.contains("'unsafe-eval'"),
        "{policy}"
    );
    assert!(
        policy.contains("frame-ancestors 'none'") && policy.contains("object-src 'none'"),
        "{policy}"
    );
    assert_eq!(header(&catalog, "x-frame-options"), "DENY");
    assert_eq!(header(&catalog, "x-content-type-options"), "nosniff");
    assert_eq!(header(&catalog, "referrer-policy"), "strict-origin-when-cross-origin");
    // Every app page: a scenario's and a run's as much as the catalog.
    for path in ["/lab/isolation/write-skew", "/atlas", "/write"] {
        let page = headers(address, path).await;
        assert!(
            header(&page, "content-security-policy").contains("frame-ancestors 'none'"),
            "{path}"
        );
    }

    let embed = headers(address, "/embed/isolation/write-skew").await;
    let policy = header(&embed, "content-security-policy");
    assert!(
        policy.ends_with("frame-ancestors *") && policy.contains(THEME_HASH),
        "{policy}"
    );
    assert_eq!(
        header(&embed, "x-frame-options"),
        "",
        "an embed may be framed by any page"
    );

    // A lesson's recordings are read from wherever their author keeps them, by the pages that
    // play them; a lesson's own page, like every other, reads only from racelab.
    let connect = |policy: &str| {
        policy
            .split(';')
            .find(|d| d.trim().starts_with("connect-src"))
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    for (path, reads) in [
        ("/lessons/0123456789abcdef/alone", "connect-src 'self' https: http:"),
        ("/embed/lessons/0123456789abcdef", "connect-src 'self' https: http:"),
        ("/lessons/0123456789abcdef", "connect-src 'self'"),
    ] {
        let page = headers(address, path).await;
        assert_eq!(connect(header(&page, "content-security-policy")), reads, "{path}");
    }

    let api = headers(address, "/api/labs").await;
    assert_eq!(header(&api, "x-content-type-options"), "nosniff");
    assert_eq!(header(&api, "x-frame-options"), "DENY");
    let _ = std::fs::remove_dir_all(&dist);
}
