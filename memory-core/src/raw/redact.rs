//! Keeping passwords out of `Debug` output and error messages, for backends configured by URL.

/// `url` fit to show: its password and any `password=` or `pass=` parameter replaced by `***`, or
/// `<unparseable URL>` when it does not parse (a broken URL cannot be trusted to show where its
/// password ends).
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "<unparseable URL>".to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    let secret = |key: &str| key == "password" || key == "pass";
    if parsed.query_pairs().any(|(key, _)| secret(&key)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if secret(&key) { "***".into() } else { value };
                (key.into_owned(), value.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// A parser's message with the password of any URL it quotes (a URL written where a `kind`
/// belongs: "unknown variant `postgres://user:pw@...`") replaced by `***`, for messages about
/// a configuration file that may hold a URL with its password.
pub fn redact_urls_in(message: &str) -> String {
    message
        .split_inclusive(['`', '"'])
        .map(|part| match part.find("://") {
            Some(_) => {
                let (quoted, end) = part.split_at(part.len() - 1);
                let closed = matches!(end, "`" | "\"");
                let url = if closed { quoted } else { part };
                let shown = redact_url(url);
                if closed { shown + end } else { shown }
            }
            None => part.to_owned(),
        })
        .collect()
}

/// `text` (a driver's error message about `url`, say) with anything in it that may be one of
/// `url`'s passwords replaced by `***`: the user info after the first `:` up to the last `@`,
/// and every `password=` and `pass=` value, as written and percent-decoded.
pub fn hide_password_of(url: &str, text: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let in_userinfo = rest
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password);
    let in_query = url.split(['?', '&']).skip(1).filter_map(|pair| {
        pair.strip_prefix("password=")
            .or_else(|| pair.strip_prefix("pass="))
    });
    let mut hidden = text.to_owned();
    for secret in in_userinfo.into_iter().chain(in_query) {
        let decoded = url::form_urlencoded::parse(format!("x={secret}").as_bytes())
            .next()
            .map(|(_, value)| value.into_owned());
        for form in [Some(secret.to_owned()), decoded].into_iter().flatten() {
            if !form.is_empty() {
                hidden = hidden.replace(&form, "***");
            }
        }
    }
    hidden
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_never_hold_a_password() {
        for (url, shown) in [
            (
                "postgres://agent:hunter2@db:5432/m",
                "postgres://agent:***@db:5432/m",
            ),
            ("redis://:hunter2@cache:6379/0", "redis://:***@cache:6379/0"),
            (
                "postgres://agent:a@db/m?sslmode=require&password=b",
                "postgres://agent:***@db/m?sslmode=require&password=***",
            ),
            ("redis://cache:6379", "redis://cache:6379"),
            (
                "redis+unix:///run/redis.sock?pass=hunter2",
                "redis+unix:///run/redis.sock?pass=***",
            ),
            (
                "postgres://agent:hunter2@db:notaport/m",
                "<unparseable URL>",
            ),
            ("postgres://agent:hun/ter2@db/m", "<unparseable URL>"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn messages_lose_every_password_of_the_url() {
        let url = "postgres://agent:hun/ter2@db/m?password=b%40d&password=other";
        let message = "could not use hun/ter2, b@d, b%40d or other";
        assert_eq!(
            hide_password_of(url, message),
            "could not use ***, ***, *** or ***"
        );
        assert_eq!(hide_password_of("redis://cache", "fine"), "fine");
    }

    #[test]
    fn a_parsers_message_loses_the_password_of_every_url_it_quotes() {
        assert_eq!(
            redact_urls_in(
                "unknown variant `postgres://agent:hunter2@db/m`, expected `markdown` or \"redis://u:pw@c\""
            ),
            "unknown variant `postgres://agent:***@db/m`, expected `markdown` or \"redis://u:***@c\""
        );
        // Quoted to the end of the message, or not quoted at all: shown only when it parses.
        assert_eq!(
            redact_urls_in("invalid value `redis://u:pw@c"),
            "invalid value `redis://u:***@c"
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
    }
}
