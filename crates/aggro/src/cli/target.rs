//! `--target`: where a command's data lives — one help naming every scheme this build opens, parsed
//! once as the command line is read (a bad URL is refused there, exit 2, naming the flag), its password
//! masked in one place.

use aggro_targets::TargetUrl;

/// The help of every command's `--target`.
#[cfg(feature = "cassandra")]
pub const HELP: &str = concat!(
    "Target URL: null: (nothing: aggro's own cost), stackdb:DIR, sqlite:PATH, postgres://USER[:PASSWORD]@HOST:PORT/DB, ",
    "redis://HOST:PORT[/DB] (a cluster: redis://HOST:PORT,HOST:PORT…), dynamodb://HOST:PORT[/TABLE], ",
    "cassandra://HOST:PORT[,HOST:PORT…][/KEYSPACE][?consistency=LEVEL]"
);
/// The help of every command's `--target`.
#[cfg(not(feature = "cassandra"))]
pub const HELP: &str = concat!(
    "Target URL: null: (nothing: aggro's own cost), stackdb:DIR, sqlite:PATH, postgres://USER[:PASSWORD]@HOST:PORT/DB, ",
    "redis://HOST:PORT[/DB] (a cluster: redis://HOST:PORT,HOST:PORT…), dynamodb://HOST:PORT[/TABLE] ",
    "(cassandra:// needs a build with the cassandra feature)"
);

/// A target URL as given, and parsed.
#[derive(Debug, Clone)]
pub struct Target {
    /// What it names.
    pub url: TargetUrl,
    given: String,
}

impl Target {
    /// The URL as given, its password masked: what reports and result files show.
    pub fn masked(&self) -> String {
        mask_password(&self.given)
    }
}

/// Parses `--target`'s value (clap's value parser).
pub fn parse(given: &str) -> Result<Target, String> {
    TargetUrl::parse(given).map(|url| Target { url, given: given.to_string() }).map_err(|e| e.to_string())
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn mask_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
        && let Some((user, _)) = userinfo.split_once(':')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_result_file() {
        assert_eq!(mask_password("postgres://u:pw@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(mask_password("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(mask_password("sqlite:./x.db"), "sqlite:./x.db");
    }

    #[test]
    fn a_bad_url_is_refused_as_it_is_read() {
        assert!(parse("stackdb:/tmp/x").is_ok());
        assert!(parse("mysql://h/db").unwrap_err().contains("mysql"));
    }
}
