//! HTTP/1.1 as a bot speaks it beside its WebSocket (login, matchmaking, a
//! shop): a request written in one buffer, and an answer parsed with
//! `httparse` as its bytes come — complete at its `Content-Length`, at the
//! last chunk of a chunked body, or at the end of the stream.

/// An HTTP request a bot makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path and query, from `/`.
    pub path: String,
    /// Headers beyond Host, Content-Length, Connection and Cookie (which the transport writes).
    pub headers: Vec<(String, String)>,
    /// The body (sent with a Content-Length when not empty, or when the method is POST or PUT).
    pub body: Vec<u8>,
    /// Keep the connection for the bot's next request (HTTP/1.1's default); false: `Connection: close`.
    pub keep_alive: bool,
}

impl HttpRequest {
    /// A POST of a JSON `body` to `path`, with `Authorization: Bearer <token>` when given.
    pub fn post_json(path: String, body: Vec<u8>, token: Option<String>) -> Self {
        let mut headers = vec![("Content-Type".into(), "application/json".into()), ("Accept".into(), "application/json".into())];
        headers.extend(token.map(|t| ("Authorization".into(), format!("Bearer {t}"))));
        Self { method: "POST".into(), path, headers, body, keep_alive: false }
    }

    /// The request's bytes for `host` (its Host header), sending `cookies` (`name=value; …`, empty for none).
    pub(super) fn to_bytes(&self, host: &str, cookies: &str) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\nHost: {host}\r\n", self.method, self.path);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !cookies.is_empty() {
            head.push_str(&format!("Cookie: {cookies}\r\n"));
        }
        if !self.keep_alive {
            head.push_str("Connection: close\r\n");
        }
        if !self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// An answer read so far.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// More bytes are needed.
    Partial,
    /// The whole answer: its status, body, the cookies it set (`name=value` each), and whether the
    /// server closes the connection after it.
    Complete { status: u16, body: Vec<u8>, cookies: Vec<String>, close: bool },
}

/// Reads `answer` (`ended`: the stream ended after it).
pub(super) fn parse_answer(answer: &[u8], ended: bool) -> Result<Answer, String> {
    let mut headers = [httparse::EMPTY_HEADER; 48];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(answer) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) if ended => {
            return Err(format!("the HTTP answer ended after {} bytes, before its headers did", answer.len()));
        }
        Ok(httparse::Status::Partial) => return Ok(Answer::Partial),
        Err(e) => return Err(format!("not an HTTP answer ({e}): {:?}", String::from_utf8_lossy(&answer[..answer.len().min(40)]))),
    };
    let status = response.code.unwrap_or(0);
    let header = |name: &str| {
        response.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).and_then(|h| std::str::from_utf8(h.value).ok()).map(str::trim)
    };
    let close = response.version == Some(0) || header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
    let cookies = response
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|h| std::str::from_utf8(h.value).ok()?.split(';').next().map(|c| c.trim().to_string()))
        .collect();
    let rest = &answer[head..];
    let body = if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        match dechunk(rest)? {
            Some(body) => body,
            None if ended => return Err("the HTTP answer ended inside its chunked body".into()),
            None => return Ok(Answer::Partial),
        }
    } else if let Some(length) = header("content-length") {
        let n: usize = length.parse().map_err(|_| format!("HTTP answer: Content-Length {length:?} is not a number"))?;
        match rest.len() >= n {
            true => rest[..n].to_vec(),
            false if ended => return Err(format!("the HTTP answer ended after {} of its {n} body bytes", rest.len())),
            false => return Ok(Answer::Partial),
        }
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        Vec::new()
    } else if ended {
        rest.to_vec()
    } else {
        return Ok(Answer::Partial);
    };
    let close = close || (header("content-length").is_none() && header("transfer-encoding").is_none() && status != 204 && status != 304);
    Ok(Answer::Complete { status, body, cookies, close })
}

/// A chunked body's bytes, once its last chunk has come (None before).
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let size = std::str::from_utf8(&rest[..eol]).ok().and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
        let Some(size) = size else { return Err(format!("HTTP answer: bad chunk size {:?}", String::from_utf8_lossy(&rest[..eol.min(20)]))) };
        rest = &rest[eol + 2..];
        if rest.len() < size + 2 {
            return Ok(None);
        }
        if size == 0 {
            return Ok(Some(body));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(status: u16, body: &[u8], close: bool) -> Answer {
        Answer::Complete { status, body: body.to_vec(), cookies: vec![], close }
    }

    #[test]
    fn an_answer_is_complete_at_its_length_its_last_chunk_or_its_end() {
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false), Ok(complete(200, b"{}", false)));
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{}", false), Ok(Answer::Partial));
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{}", true).unwrap_err().contains("2 of its 3"));
        // HTTP/1.0 and `Connection: close` end the connection; without a length the body runs to the end.
        assert_eq!(parse_answer(b"HTTP/1.0 520 x\r\n\r\n{\"code\":4212}", false), Ok(Answer::Partial));
        assert_eq!(parse_answer(b"HTTP/1.0 520 x\r\n\r\n{\"code\":4212}", true), Ok(complete(520, b"{\"code\":4212}", true)));
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nab", false), Ok(complete(200, b"a", true)));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n";
        assert_eq!(parse_answer(chunked, false), Ok(Answer::Partial));
        assert_eq!(parse_answer(&[&chunked[..], b"0\r\n\r\n"].concat(), false), Ok(complete(200, b"Wikipedia", false)));
        assert_eq!(parse_answer(b"HTTP/1.1 204 No Content\r\n\r\n", false), Ok(complete(204, b"", false)));
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\nConten", true).unwrap_err().contains("before its headers"));
        assert!(parse_answer(b"\x00\x01garbage\r\n\r\n", false).unwrap_err().starts_with("not an HTTP answer"));
        let cookies = parse_answer(b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=abc; Path=/; HttpOnly\r\nContent-Length: 0\r\n\r\n", false);
        assert!(matches!(cookies, Ok(Answer::Complete { cookies, .. }) if cookies == ["sid=abc"]));
    }

    #[test]
    fn a_request_carries_its_headers_cookies_and_length() {
        let server = "127.0.0.1:2567";
        let r = HttpRequest::post_json("/matchmake/join/lobby".into(), b"{}".to_vec(), Some("t0k".into()));
        let text = String::from_utf8(r.to_bytes(server, "sid=abc")).unwrap();
        assert!(text.starts_with("POST /matchmake/join/lobby HTTP/1.1\r\nHost: 127.0.0.1:2567\r\n"), "{text}");
        assert!(text.contains("\r\nAuthorization: Bearer t0k\r\n") && text.contains("\r\nCookie: sid=abc\r\n"), "{text}");
        assert!(text.contains("Connection: close\r\n") && text.ends_with("Content-Length: 2\r\n\r\n{}"), "{text}");
        let get = HttpRequest { method: "GET".into(), path: "/shop".into(), keep_alive: true, ..Default::default() };
        let text = String::from_utf8(get.to_bytes(server, "")).unwrap();
        assert_eq!(text, "GET /shop HTTP/1.1\r\nHost: 127.0.0.1:2567\r\n\r\n");
    }
}
