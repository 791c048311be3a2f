//! The address phones and other computers open Pillbox at (the public
//! URL): links in invitations and mail, the OAuth issuer and the web app's
//! redirect are built from it. It is an origin, so what a person types
//! (`raspberrypi.local:8080/`, with a path, in capitals) is checked and
//! kept in one form.

/// The origin `text` names (`http://raspberrypi.local:8080`), or why not.
pub fn parse(text: &str) -> Result<String, &'static str> {
    const SHAPE: &str = "the address must start with http:// or https:// and name a host, such as http://raspberrypi.local:8080";
    let text = text.trim();
    let url = reqwest::Url::parse(text).map_err(|_| SHAPE)?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(SHAPE);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the address must not hold a user name or password");
    }
    if url.query().is_some() || url.fragment().is_some() || url.path() != "/" {
        return Err(
            "the address is the server's alone, without a path, such as http://raspberrypi.local:8080",
        );
    }
    Ok(url.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn an_origin_is_kept_in_one_form() {
        assert_eq!(
            parse(" HTTP://RaspberryPi.local:8080/ ").unwrap(),
            "http://raspberrypi.local:8080"
        );
        assert_eq!(
            parse("https://pillbox.example:443").unwrap(),
            "https://pillbox.example"
        );
        assert_eq!(parse("http://[::1]:8080").unwrap(), "http://[::1]:8080");
    }

    #[test]
    fn what_is_not_an_origin_is_refused() {
        for text in [
            "",
            "raspberrypi.local:8080",
            "ftp://example.org",
            "http://",
            "http://user:pw@example.org",
            "http://example.org/pillbox",
            "http://example.org/?a=1",
            "http://example.org/#top",
        ] {
            assert!(parse(text).is_err(), "{text}");
        }
    }
}
