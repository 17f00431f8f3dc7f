//! The page around the charts: an HTML builder for sections, tables and
//! charts, the style sheet, and the one small script every report carries
//! (it counts the charts and says which have no data).

use super::chart::{Chart, escape};
use std::fmt::Write;

/// The body of a report being built.
#[derive(Default)]
pub struct Html {
    out: String,
    in_section: bool,
}

impl Html {
    /// Opens a section with a heading (`id` names it for links and tests).
    pub fn section(&mut self, id: &str, title: &str) {
        if self.in_section {
            self.out.push_str("</section>");
        }
        self.in_section = true;
        let _ = write!(self.out, r#"<section id="{}"><h2>{}</h2>"#, escape(id), escape(title));
    }

    /// A chart, or a note saying there was nothing to draw.
    pub fn chart(&mut self, chart: &Chart) {
        if chart.point_count() == 0 {
            let _ = write!(self.out, r#"<p class="none">{}: nothing recorded.</p>"#, escape(&chart.title));
        } else {
            self.out.push_str(&chart.svg());
        }
    }

    /// A paragraph of plain text.
    pub fn para(&mut self, text: &str) {
        let _ = write!(self.out, "<p>{}</p>", escape(text));
    }

    /// A paragraph of trusted markup (built by this crate).
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// A table; a cell starting with `!` is marked as a failure, with `+` as a pass.
    pub fn table<R: AsRef<[String]>>(&mut self, class: &str, headers: &[&str], rows: &[R]) {
        let _ = write!(self.out, r#"<table class="{}"><thead><tr>"#, escape(class));
        for h in headers {
            let _ = write!(self.out, "<th>{}</th>", escape(h));
        }
        self.out.push_str("</tr></thead><tbody>");
        for row in rows {
            self.out.push_str("<tr>");
            for cell in row.as_ref() {
                let (class, text) = match cell.as_bytes().first() {
                    Some(b'!') => (" class=\"fail\"", &cell[1..]),
                    Some(b'+') => (" class=\"pass\"", &cell[1..]),
                    _ => ("", cell.as_str()),
                };
                let _ = write!(self.out, "<td{class}>{}</td>", escape(text));
            }
            self.out.push_str("</tr>");
        }
        self.out.push_str("</tbody></table>");
    }

    /// Collapsible preformatted text (the spec, the host).
    pub fn details(&mut self, summary: &str, text: &str) {
        let _ = write!(self.out, "<details><summary>{}</summary><pre>{}</pre></details>", escape(summary), escape(text));
    }

    /// The body markup so far, sections closed.
    pub fn finish(mut self) -> String {
        if self.in_section {
            self.out.push_str("</section>");
        }
        self.out
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1560px;padding:8px 24px;color:#222}\
h1{font-size:20px;margin:12px 0 4px}h2{font-size:16px;margin:24px 0 6px;border-bottom:1px solid #ddd}\
section{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:flex-start}section>h2,section>p,section>table,section>details{flex-basis:100%}\
svg.chart{width:760px;max-width:100%;height:auto;background:#fff;border:1px solid #eee}\
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.t{font-weight:600;font-size:12px}svg text.y{text-anchor:end}\
svg text.x{text-anchor:middle}svg text.m{fill:#c00}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:right}\
td:first-child,th:first-child{text-align:left}td.fail{color:#b00;font-weight:600}td.pass{color:#070;font-weight:600}\
.warn{background:#fff4d6;padding:6px 10px;border-left:4px solid #e69f00}.none{color:#777}\
pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:480px}.meta{color:#555}#live{color:#070}";

/// Counts the charts when the page loads and reports any without data (the
/// report test reads `data-charts`, `data-empty` and `data-intervals` off the body).
const CHECK: &str = "function aggroCheck(){var b=document.body,c=document.querySelectorAll('svg.chart'),e=[];\
c.forEach(function(s){if(!(+s.getAttribute('data-points')>0))e.push(s.querySelector('title').textContent)});\
b.setAttribute('data-charts',c.length);b.setAttribute('data-empty',e.length);\
var m=document.querySelector('main [data-intervals]');if(m)b.setAttribute('data-intervals',m.getAttribute('data-intervals'));\
if(e.length)console.error('charts without data: '+e.join(', '))}aggroCheck();\
document.body.setAttribute('data-first-intervals',document.body.getAttribute('data-intervals'));";

/// While a run goes, the page asks for its body again (`/main?after=N`,
/// which the server answers once it has more than N intervals: the body's
/// `data-seen` when it has one — a live view that keeps only the last
/// intervals says how many the run has — else its `data-intervals`) and swaps
/// it in, counting swaps in `data-swaps`; it waits `gap_ms` between requests
/// and stops when the run has ended (`410`) or the process is gone.
fn live_script(gap_ms: u64) -> String {
    format!(
        "var aggroSwaps=0;function aggroPoll(){{var s=document.querySelector('main [data-seen]');\
var n=s?s.getAttribute('data-seen'):(document.body.getAttribute('data-intervals')||0);\
fetch('/main?after='+n,{{cache:'no-store'}}).then(function(r){{var ended=r.status===410;return r.text().then(function(t){{\
swap(t,ended?'run ended':'live');if(!ended)setTimeout(aggroPoll,{gap_ms})}})}})\
.catch(function(){{document.getElementById('live').textContent='run process gone'}})}}\
function swap(t,state){{document.querySelector('main').innerHTML=t;document.getElementById('live').textContent=state;\
document.body.setAttribute('data-swaps',++aggroSwaps);aggroCheck()}}setTimeout(aggroPoll,{gap_ms});"
    )
}

/// A whole page: `main` inside, titled, styled; with `live_gap_ms` it updates itself.
pub fn page(title: &str, main: &str, live_gap_ms: Option<u64>) -> String {
    let live = live_gap_ms.map_or(String::new(), |_| r#"<p id="live">live</p>"#.to_string());
    let script = match live_gap_ms {
        Some(ms) => format!("{CHECK}{}", live_script(ms)),
        None => CHECK.to_string(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{}</title><style>{STYLE}</style></head><body>{live}<main>{main}</main><script>{script}</script></body></html>",
        escape(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::chart::Series;

    #[test]
    fn sections_tables_and_empty_charts() {
        let mut h = Html::default();
        h.section("a", "First <one>");
        h.table("t", &["op", "p99"], &[vec!["write".to_string(), "!12ms".to_string()]]);
        h.chart(&Chart::new("empty", "x", "y"));
        h.section("b", "Second");
        h.chart(&Chart::new("full", "x", "y").with(Series::new("s", vec![(0.0, 1.0)])));
        let body = h.finish();
        assert_eq!(body.matches("<section").count(), 2);
        assert_eq!(body.matches("</section>").count(), 2);
        assert!(body.contains("First &lt;one&gt;"));
        assert!(body.contains(r#"<td class="fail">12ms</td>"#));
        assert!(body.contains("empty: nothing recorded."));
        assert_eq!(body.matches("<svg").count(), 1);
        let p = page("t", &body, None);
        assert!(p.starts_with("<!doctype html>") && p.contains("aggroCheck") && !p.contains("fetch("));
        assert!(page("t", &body, Some(250)).contains("fetch('/main?after='"));
    }
}
