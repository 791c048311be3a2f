//! Hardening of the HTTP surface: page security headers, strict request
//! parsing, errors in our own words, and a rate limit keyed on what was
//! verified.

use axum::http::Method;

use crate::support::TestApp;

#[tokio::test]
async fn pages_carry_a_strict_content_security_policy_and_refuse_framing() {
    let app = TestApp::new().await;
    let page = app.raw(Method::GET, "/", None, None, &[]).await;
    page.assert_status(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let csp = page.header("content-security-policy").expect("a CSP");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // Under that policy an inline style or script would not apply.
    let html = page.body["raw"].as_str().unwrap();
    assert!(
        !html.contains("<style") && !html.contains("<script>"),
        "{html}"
    );
    assert!(!html.contains(" style="), "{html}");
    let css = app.raw(Method::GET, "/index.css", None, None, &[]).await;
    css.assert_status(200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    // JSON answers are not pages.
    let json = app
        .raw(Method::GET, "/api/v1/capabilities", None, None, &[])
        .await;
    assert!(json.header("content-security-policy").is_none());
}
