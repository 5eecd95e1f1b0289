//! The headers a public service sends today, on every answer: `X-Content-Type-Options: nosniff`
//! and a `Referrer-Policy`; on pages, a `Content-Security-Policy` that lets a page run only
//! racelab's own scripts and wasm; framing allowed for `/embed/…` (any host page may embed a
//! race) and refused for everything else. Pages read only from racelab, except those that read a
//! recording from wherever its author keeps it ([`reads_anywhere`]).
//!
//! The app's pages (the full app's, the embed app's, the player app's) each carry two inline scripts Trunk writes (the theme, set before anything
//! is drawn, and the wasm loader). Rather than `'unsafe-inline'`, the policy names each by its
//! SHA-256, taken from the page as it is sent: a script added to a page without being in it
//! does not run.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use shared::pages::Page;

/// Pages larger than this are sent as they are, with the strictest policy (no inline script).
const MAX_PAGE: usize = 4 * 1024 * 1024;

/// Adds the headers to `request`'s answer.
pub async fn secure(request: Request, next: Next) -> Response {
    let embed = request.uri().path().starts_with("/embed/");
    let reads_anywhere = reads_anywhere(request.uri().path());
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let headers = &mut parts.headers;
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("strict-origin-when-cross-origin"),
    );
    if !embed {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    let html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if !html || headers.contains_key(header::CONTENT_ENCODING) {
        return Response::from_parts(parts, body);
    }
    let bytes = match axum::body::to_bytes(body, MAX_PAGE).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(%error, "a page too large to read for its policy");
            return Response::from_parts(parts, Body::empty());
        }
    };
    let page = String::from_utf8_lossy(&bytes);
    if let Ok(value) = HeaderValue::from_str(&policy(&inline_scripts(&page), embed, reads_anywhere)) {
        parts.headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The page that plays a recording fetched from any origin.
pub const RECORDING_PLAYER: &str = "/embed/recording";

/// Whether the page at `path` reads recordings from any origin: the player, and a lesson's
/// pages that play its recording rounds (taken alone, embedded in a course, and the room, whose
/// trainer's page reads a round's file and sends it). Their answers are read as data, by the
/// app's own JSON reader, never run.
pub fn reads_anywhere(path: &str) -> bool {
    path == RECORDING_PLAYER
        || matches!(
            Page::at(path),
            Some(Page::LessonAlone(_) | Page::EmbedLesson(_) | Page::Room(_))
        )
}

/// The policy for a page whose inline scripts are `scripts`: framed by anyone if `embed`, and
/// fetching from any http(s) origin if `reads_anywhere` (its answers are read as data, by the
/// app's own JSON reader, and every text of them is drawn escaped).
pub fn policy(scripts: &[&str], embed: bool, reads_anywhere: bool) -> String {
    let hashes: String = scripts
        .iter()
        .map(|s| format!(" 'sha256-{}'", sha256_base64(s)))
        .collect();
    let ancestors = if embed { "*" } else { "'none'" };
    let connect = if reads_anywhere {
        "'self' https: http:"
    } else {
        "'self'"
    };
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src {connect}; font-src 'self'; object-src 'none'; base-uri 'self'; \
         form-action 'self'; frame-ancestors {ancestors}"
    )
}

/// The text of each `<script>` without a `src`, as the browser hashes it.
pub fn inline_scripts(page: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = page;
    while let Some(open) = rest.find("<script") {
        let after = &rest[open..];
        let Some(end_of_tag) = after.find('>') else { break };
        let tag = &after[..end_of_tag];
        let body = &after[end_of_tag + 1..];
        let Some(close) = body.find("</script>") else { break };
        if !tag.contains(" src=") {
            found.push(&body[..close]);
        }
        rest = &body[close..];
    }
    found
}

fn sha256_base64(text: &str) -> String {
    base64(&Sha256::digest(text.as_bytes()))
}

/// Standard base64 with padding (RFC 4648), as CSP hashes are written.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648s() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        // The hash of an empty script, as browsers report it in their console.
        assert_eq!(sha256_base64(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    }

    #[test]
    fn only_inline_scripts_are_hashed_and_only_embeds_may_be_framed() {
        let page = "<head><script>one()</script><script src=\"/x.js\"></script>\
                    <script type=\"module\">\nimport x;\n</script></head>";
        assert_eq!(inline_scripts(page), ["one()", "\nimport x;\n"]);
        let page_policy = policy(&inline_scripts(page), false, false);
        assert!(page_policy.contains(&format!("'sha256-{}'", sha256_base64("one()"))));
        assert!(page_policy.contains("frame-ancestors 'none'"));
        let scripts = page_policy
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .unwrap_or_default();
        assert!(
            !scripts.contains("'unsafe-inline'") && !scripts.contains("'unsafe-eval'"),
            "{scripts}"
        );
        assert!(policy(&[], true, false).ends_with("frame-ancestors *"));
        assert!(policy(&[], true, false).contains("connect-src 'self';"));
        assert!(policy(&[], true, true).contains("connect-src 'self' https: http:;"));
    }

    #[test]
    fn only_the_pages_that_play_recordings_from_elsewhere_read_anywhere() {
        for path in [
            "/embed/recording",
            "/lessons/0123/alone",
            "/embed/lessons/0123",
            "/room/K7QX2M",
        ] {
            assert!(reads_anywhere(path), "{path}");
        }
        for path in [
            "/",
            "/lessons/0123",
            "/lab/isolation/write-skew",
            "/embed/isolation/write-skew",
            "/write",
        ] {
            assert!(!reads_anywhere(path), "{path}");
        }
    }
}
