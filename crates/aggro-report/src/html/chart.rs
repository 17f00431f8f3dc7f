//! Charts as inline SVG: lines over linear or logarithmic axes, stacked
//! areas, reference marks. No script and nothing fetched: the SVG is the chart.

use std::fmt::Write;

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Evenly spaced values, from zero (or the smallest value below zero).
    Linear,
    /// Decades evenly spaced; values ≤ 0 are left out.
    Log,
}

/// One named line (or, in a stacked chart, one layer).
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, y) in axis units, in x order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from its name and points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.into(), points }
    }
}

/// A labelled reference line across the plot.
#[derive(Clone, Debug)]
pub enum Mark {
    /// A vertical line at this x.
    X(f64, String),
    /// A horizontal line at this y.
    Y(f64, String),
}

/// A chart, rendered by [`Chart::svg`].
#[derive(Clone, Debug)]
pub struct Chart {
    /// Heading above the plot.
    pub title: String,
    /// What the x axis counts, with its unit.
    pub x_label: String,
    /// What the y axis counts, with its unit.
    pub y_label: String,
    /// The y axis' scale (x is always linear).
    pub y_scale: Scale,
    /// Tick labels of the x axis at given positions, instead of numbers.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// The lines, or the layers bottom-up when `stacked`.
    pub series: Vec<Series>,
    /// Draw each series on top of the ones before it, filled.
    pub stacked: bool,
    /// Draw points as dots too (for sparse data such as sweeps).
    pub dots: bool,
    /// Reference lines.
    pub marks: Vec<Mark>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 260.0;
/// Height of a row of the legend, drawn under the plot.
const LEGEND_ROW: f64 = 16.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;
/// Colours of series in order (colour-blind-safe Okabe–Ito, then greys).
pub const PALETTE: [&str; 8] = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#999999"];

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    log: bool,
}

impl Frame {
    fn x(&self, v: f64) -> f64 {
        let span = if self.x1 > self.x0 { self.x1 - self.x0 } else { 1.0 };
        LEFT + (v - self.x0) / span * (WIDTH - LEFT - RIGHT)
    }
    fn y(&self, v: f64) -> f64 {
        let (v, lo, hi) = if self.log { (v.max(self.y0).log10(), self.y0.log10(), self.y1.log10()) } else { (v, self.y0, self.y1) };
        let span = if hi > lo { hi - lo } else { 1.0 };
        HEIGHT - BOTTOM - (v - lo) / span * (HEIGHT - TOP - BOTTOM)
    }
}

impl Chart {
    /// A line chart with a linear y axis and no series yet.
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            y_scale: Scale::Linear,
            x_ticks: None,
            series: Vec::new(),
            stacked: false,
            dots: false,
            marks: Vec::new(),
        }
    }

    /// Adds a series (builder style).
    pub fn with(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Points drawn, over all series.
    pub fn point_count(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }

    /// The layers' tops when stacked: each series' y added to those below it, point by point.
    fn drawn(&self) -> Vec<Series> {
        if !self.stacked {
            return self.series.clone();
        }
        let mut below: Vec<f64> = Vec::new();
        self.series
            .iter()
            .map(|s| {
                below.resize(below.len().max(s.points.len()), 0.0);
                let points = s
                    .points
                    .iter()
                    .zip(below.iter_mut())
                    .map(|(&(x, y), b)| {
                        *b += y;
                        (x, *b)
                    })
                    .collect();
                Series::new(s.name.clone(), points)
            })
            .collect()
    }

    fn frame(&self, drawn: &[Series]) -> Frame {
        let log = self.y_scale == Scale::Log;
        let all = || drawn.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite() && p.1.is_finite());
        let (mut x0, mut x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
        let ys = all().map(|p| p.1).filter(|&y| !log || y > 0.0);
        let (mut y0, mut y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
        for m in &self.marks {
            match *m {
                Mark::X(x, _) => (x0, x1) = (x0.min(x), x1.max(x)),
                Mark::Y(y, _) if !log || y > 0.0 => (y0, y1) = (y0.min(y), y1.max(y)),
                Mark::Y(..) => {}
            }
        }
        if let Some(ticks) = &self.x_ticks {
            for (x, _) in ticks {
                (x0, x1) = (x0.min(*x), x1.max(*x));
            }
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if !y0.is_finite() {
            (y0, y1) = (if log { 1.0 } else { 0.0 }, 1.0);
        }
        if log {
            y0 = 10f64.powf(y0.log10().floor());
            y1 = 10f64.powf(y1.log10().ceil().max(y0.log10() + 1.0));
        } else {
            y0 = y0.min(0.0);
            y1 = if y1 > y0 { nice_ceiling(y1) } else { y0 + 1.0 };
        }
        Frame { x0, x1, y0, y1, log }
    }

    /// The chart as an `<svg>` element (class `chart`, `data-points` = points drawn).
    pub fn svg(&self) -> String {
        let drawn = self.drawn();
        let f = self.frame(&drawn);
        let mut out = String::with_capacity(1024 + 16 * self.point_count());
        let _ = write!(
            out,
            r#"<svg class="chart" data-points="{}" viewBox="0 0 {WIDTH} {}" xmlns="http://www.w3.org/2000/svg" role="img"><title>{}</title>"#,
            self.point_count(),
            HEIGHT + 4.0 + LEGEND_ROW * self.legend_rows().len() as f64,
            escape(&self.title)
        );
        let _ = write!(out, r#"<text class="t" x="{LEFT}" y="16">{}</text>"#, escape(&self.title));
        self.axes(&f, &mut out);
        let tops: Vec<String> = drawn.iter().map(|s| path(&f, &s.points)).collect();
        for (k, s) in drawn.iter().enumerate().rev() {
            let colour = PALETTE[k % PALETTE.len()];
            if self.stacked && s.points.len() > 1 {
                // Fill between this layer's top and the one below (or the axis).
                let base = match k {
                    0 => format!("L{:.1},{:.1}L{:.1},{:.1}Z", f.x(s.points[s.points.len() - 1].0), f.y(f.y0), f.x(s.points[0].0), f.y(f.y0)),
                    _ => reversed(&f, &drawn[k - 1].points) + "Z",
                };
                let _ = write!(out, r#"<path d="{}{}" fill="{colour}" fill-opacity="0.55" stroke="none"/>"#, tops[k], base);
            }
            let _ = write!(out, r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.4"/>"#, tops[k]);
            // A lone point draws no line: show it as a dot.
            if self.dots || s.points.iter().filter(|p| p.1.is_finite()).count() == 1 {
                for &(x, y) in s.points.iter().filter(|p| p.1.is_finite() && (!f.log || p.1 > 0.0)) {
                    let _ = write!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#, f.x(x), f.y(y));
                }
            }
        }
        for m in &self.marks {
            let (x1, y1, x2, y2, label) = match m {
                Mark::X(x, l) => (f.x(*x), TOP, f.x(*x), HEIGHT - BOTTOM, l),
                Mark::Y(y, l) => (LEFT, f.y(*y), WIDTH - RIGHT, f.y(*y), l),
            };
            let _ = write!(
                out,
                r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#c00" stroke-dasharray="5 3"/><text class="m" x="{:.1}" y="{:.1}">{}</text>"##,
                x1 + 3.0,
                y1.max(TOP) + 11.0,
                escape(label)
            );
        }
        self.legend(&mut out);
        out.push_str("</svg>");
        out
    }

    fn axes(&self, f: &Frame, out: &mut String) {
        let (bottom, right) = (HEIGHT - BOTTOM, WIDTH - RIGHT);
        let _ = write!(out, r##"<path d="M{LEFT},{TOP}V{bottom}H{right}" fill="none" stroke="#444"/>"##);
        let y_ticks = if f.log { log_ticks(f.y0, f.y1) } else { linear_ticks(f.y0, f.y1) };
        for y in y_ticks {
            let py = f.y(y);
            let _ = write!(
                out,
                r##"<line x1="{LEFT}" y1="{py:.1}" x2="{right}" y2="{py:.1}" stroke="#e4e4e4"/><text class="y" x="{:.0}" y="{:.1}">{}</text>"##,
                LEFT - 4.0,
                py + 4.0,
                number(y)
            );
        }
        let x_ticks = match &self.x_ticks {
            Some(t) => t.clone(),
            None => linear_ticks(f.x0, f.x1).into_iter().map(|x| (x, number(x))).collect(),
        };
        for (x, label) in x_ticks {
            let _ = write!(out, r#"<text class="x" x="{:.1}" y="{:.0}">{}</text>"#, f.x(x), bottom + 14.0, escape(&label));
        }
        let _ = write!(out, r#"<text class="x" x="{:.0}" y="{:.0}">{}</text>"#, (LEFT + right) / 2.0, HEIGHT - 6.0, escape(&self.x_label));
        let _ = write!(out, r#"<text class="x" transform="translate(12 {:.0}) rotate(-90)">{}</text>"#, (TOP + bottom) / 2.0, escape(&self.y_label));
    }

    /// The legend's entries as rows under the plot: (series index, x) per entry.
    fn legend_rows(&self) -> Vec<Vec<(usize, f64)>> {
        let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
        let mut x = WIDTH; // past the end: the first entry opens a row
        for (k, s) in self.series.iter().enumerate() {
            let width = 22.0 + 6.4 * s.name.chars().count() as f64;
            if x + width > WIDTH - RIGHT {
                rows.push(Vec::new());
                x = LEFT;
            }
            rows.last_mut().expect("a row is open").push((k, x));
            x += width;
        }
        rows
    }

    fn legend(&self, out: &mut String) {
        for (r, row) in self.legend_rows().iter().enumerate() {
            let y = HEIGHT + 10.0 + LEGEND_ROW * r as f64;
            for &(k, x) in row {
                let _ = write!(
                    out,
                    r#"<rect x="{x:.0}" y="{:.0}" width="10" height="10" fill="{}"/><text class="l" x="{:.0}" y="{y:.0}">{}</text>"#,
                    y - 9.0,
                    PALETTE[k % PALETTE.len()],
                    x + 13.0,
                    escape(&self.series[k].name)
                );
            }
        }
    }
}

/// An SVG path through the finite points; a gap (NaN) starts a new segment.
fn path(f: &Frame, points: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    let mut pen_down = false;
    for &(x, y) in points {
        if !y.is_finite() || (f.log && y <= 0.0) {
            pen_down = false;
            continue;
        }
        let _ = write!(d, "{}{:.1},{:.1}", if pen_down { 'L' } else { 'M' }, f.x(x), f.y(y));
        pen_down = true;
    }
    d
}

/// The points backwards as a continuation of a path (the lower edge of a stacked layer).
fn reversed(f: &Frame, points: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    for &(x, y) in points.iter().rev() {
        let _ = write!(d, "L{:.1},{:.1}", f.x(x), f.y(if y.is_finite() { y } else { 0.0 }));
    }
    d
}

/// 1, 2 or 5 times a power of ten, at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|&c| c >= v * 0.9999).unwrap_or(10.0 * p)
}

fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = span / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|&s| s >= raw).unwrap_or(10.0 * p);
    let first = (lo / step).ceil() as i64;
    (first..).map(|k| k as f64 * step).take_while(|&v| v <= hi + step * 1e-9).take(12).collect()
}

fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().round() as i32, hi.log10().round() as i32);
    let decades = (a..=b).map(|e| 10f64.powi(e));
    if b - a <= 2 { decades.flat_map(|d| [d, 2.0 * d, 5.0 * d]).filter(|&v| v <= hi * 1.0001).collect() } else { decades.collect() }
}

/// A tick label: compact, no trailing zeros (0.25, 40, 1.5k, 2M).
pub fn number(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = match a {
        _ if a >= 1e9 => (v / 1e9, "G"),
        _ if a >= 1e6 => (v / 1e6, "M"),
        _ if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = if scaled.abs() >= 100.0 || scaled == scaled.trunc() {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 1.0 {
        format!("{scaled:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{scaled:.4}").trim_end_matches('0').trim_end_matches('.').to_string()
    };
    text + suffix
}

/// Text made safe for HTML and SVG content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0, 1.0).iter().map(|&v| number(v)).collect::<Vec<_>>(), ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(log_ticks(1.0, 100.0), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_ticks(0.01, 1000.0).len(), 6);
        assert_eq!(nice_ceiling(7.3), 10.0);
        assert_eq!(nice_ceiling(180.0), 200.0);
        assert_eq!(number(1500.0), "1500");
        assert_eq!(number(15000.0), "15k");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(2.5e6), "2.5M");
    }

    #[test]
    fn an_svg_holds_every_series_and_mark() {
        let c = Chart::new("p99 <over> time", "elapsed (s)", "ms")
            .with(Series::new("p50", vec![(0.0, 1.0), (1.0, 2.0), (2.0, f64::NAN), (3.0, 1.5)]))
            .with(Series::new("p99", vec![(0.0, 3.0), (1.0, 4.0)]));
        let mut c = c;
        c.marks.push(Mark::Y(5.0, "slo".into()));
        let svg = c.svg();
        assert!(svg.starts_with("<svg class=\"chart\" data-points=\"6\""));
        assert!(svg.contains("p99 &lt;over&gt; time"));
        assert_eq!(svg.matches("stroke-width=\"1.4\"").count(), 2);
        // The NaN splits the first line into two segments.
        assert!(svg.matches('M').count() >= 3);
        assert!(svg.contains(">slo</text>"));
        // Two short names share one legend row under the plot; many long ones wrap.
        assert_eq!(c.legend_rows().len(), 1);
        assert!(svg.contains(r#"viewBox="0 0 760 280""#));
        assert!(Chart::new("one", "x", "y").with(Series::new("s", vec![(1.0, 2.0)])).svg().contains("<circle"));
        let mut wide = Chart::new("many", "x", "y");
        for k in 0..8 {
            wide.series.push(Series::new(format!("gunfire_delay/40/send-flush-{k}"), vec![(0.0, 1.0)]));
        }
        assert!(wide.legend_rows().len() >= 3);
    }

    #[test]
    fn stacked_layers_add_up() {
        let mut c =
            Chart::new("phases", "s", "ms").with(Series::new("a", vec![(0.0, 1.0), (1.0, 2.0)])).with(Series::new("b", vec![(0.0, 3.0), (1.0, 3.0)]));
        c.stacked = true;
        let tops = c.drawn();
        assert_eq!(tops[1].points, vec![(0.0, 4.0), (1.0, 5.0)]);
        assert!(c.svg().contains("fill-opacity"));
    }

    #[test]
    fn a_log_axis_leaves_out_zeros_and_an_empty_chart_still_renders() {
        let mut c = Chart::new("dist", "percentile", "ms").with(Series::new("x", vec![(0.0, 0.0), (1.0, 10.0), (2.0, 1000.0)]));
        c.y_scale = Scale::Log;
        let svg = c.svg();
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        let empty = Chart::new("nothing", "x", "y").svg();
        assert!(empty.contains("data-points=\"0\""));
    }
}
