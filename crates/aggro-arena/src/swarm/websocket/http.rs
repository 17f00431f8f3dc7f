//! The matchmaking call in HTTP/1.0: one request, the answer read to the end
//! of the stream and parsed with `httparse`.

use std::net::SocketAddr;

/// A JSON POST of `body` to `path` on `server`.
pub(super) fn post(server: SocketAddr, path: &str, body: &[u8], token: Option<&str>) -> Vec<u8> {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let mut request = format!(
        "POST {path} HTTP/1.0\r\nHost: {server}\r\nContent-Type: application/json\r\nAccept: application/json\r\n{auth}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// An HTTP answer's status and body (to the end of the stream, or its Content-Length).
pub(super) fn parse_answer(answer: &[u8]) -> Result<(u16, &[u8]), String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(answer) {
        Ok(httparse::Status::Complete(head)) => {
            let status = response.code.unwrap_or(0);
            let length = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse::<usize>().ok());
            let body = &answer[head..];
            Ok((status, length.map_or(body, |n| &body[..n.min(body.len())])))
        }
        Ok(httparse::Status::Partial) => Err(format!("the HTTP answer ended after {} bytes, before its headers did", answer.len())),
        Err(e) => Err(format!("not an HTTP answer ({e}): {:?}", String::from_utf8_lossy(&answer[..answer.len().min(40)]))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_gives_its_status_and_body_and_a_broken_one_says_why() {
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"), Ok((200, &b"{}"[..])));
        // Without a length the body runs to the end of the stream; with one, bytes past it are not the body.
        assert_eq!(parse_answer(b"HTTP/1.0 520 x\r\n\r\n{\"code\":4212}"), Ok((520, &b"{\"code\":4212}"[..])));
        assert_eq!(parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab"), Ok((200, &b"a"[..])));
        assert!(parse_answer(b"HTTP/1.1 200 OK\r\nConten").unwrap_err().contains("before its headers"));
        assert!(parse_answer(b"\x00\x01garbage\r\n\r\n").unwrap_err().starts_with("not an HTTP answer"));
        let request = post("127.0.0.1:2567".parse().unwrap(), "/matchmake/join/lobby", b"{}", None);
        assert!(request.starts_with(b"POST /matchmake/join/lobby HTTP/1.0\r\nHost: 127.0.0.1:2567\r\n"));
        assert!(request.ends_with(b"Content-Length: 2\r\n\r\n{}"));
        let request = String::from_utf8(post("127.0.0.1:2567".parse().unwrap(), "/m", b"{}", Some("t0k"))).unwrap();
        assert!(request.contains("\r\nAuthorization: Bearer t0k\r\n"), "{request}");
    }
}
