//! YCSB workload files run unchanged: a CoreWorkload property file (YCSB's
//! `workloads/workloada` and the like) translated into a scenario over the
//! record layout of `scenarios/ycsb/core.toml` (built in), as pgbench's
//! scripts are translated in [`pgbench`](super::pgbench).
//!
//! The proportions become the mix's weights, `requestdistribution` the key
//! space's distribution, `recordcount` and `maxscanlength` the `records` and
//! `scanlength` variables, `operationcount` the run's request limit, and the
//! record's properties (`fieldcount`, `fieldlength`,
//! `fieldlengthdistribution`, `readallfields`, `writeallfields`) its
//! [`Layout`]. What the translation cannot honour (another table or
//! workload class, a scan length distribution other than uniform) is refused
//! by name, all at once; a key it does not know is refused with its line, as
//! a typo would be.

mod layout;

pub use layout::Layout;

use super::file::ScenarioError;
use aggro_core::scenario::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Keys read for their value; each is checked below.
const KNOWN: &[&str] = &[
    "workload",
    "recordcount",
    "operationcount",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "insertorder",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "maxscanlength",
    "scanlengthdistribution",
    "fieldcount",
    "fieldlength",
    "fieldlengthdistribution",
    "readallfields",
    "writeallfields",
    "table",
];

/// What the translation fixes: each property, its default, the values it honours, and why.
const FIXED: &[(&str, &str, &[&str], &str)] = &[
    (
        "workload",
        "site.ycsb.workloads.CoreWorkload",
        &["site.ycsb.workloads.CoreWorkload", "com.yahoo.ycsb.workloads.CoreWorkload"],
        "only YCSB's CoreWorkload is translated",
    ),
    ("table", "usertable", &["usertable"], "the layout's table is usertable"),
    ("fieldlengthdistribution", "constant", &["constant", "uniform", "zipfian"], "YCSB's are constant, uniform and zipfian"),
    ("readallfields", "true", &["true", "false"], "true or false"),
    ("writeallfields", "false", &["true", "false"], "true or false"),
    ("scanlengthdistribution", "uniform", &["uniform"], "scan lengths are uniform in this translation (zipfian is not)"),
];

/// The most fields a record may have (PostgreSQL's tables hold 1,600 columns).
const MOST_FIELDS: usize = 1000;
/// The longest field (a request stays far below the scenario's 16 MiB input cap times fields).
const MOST_LENGTH: usize = 1 << 20;

/// Whether `text` (of a file not named `.toml`) reads as a YCSB property file:
/// a `key=value` line naming the workload class or a proportion.
pub fn looks_like(path: &Path, text: &str) -> bool {
    path.extension().is_none_or(|e| e != "toml")
        && properties(text).is_ok_and(|p| p.contains_key("workload") || p.keys().any(|k| k.ends_with("proportion")))
}

/// `key=value` (or `key: value`) lines, `#` and `!` comments; each value with its line.
fn properties(text: &str) -> Result<BTreeMap<String, (usize, String)>, (usize, String)> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some(at) = line.find(['=', ':']) else {
            return Err((i + 1, format!("{line:?}: expected key=value")));
        };
        out.insert(line[..at].trim().to_string(), (i + 1, line[at + 1..].trim().to_string()));
    }
    Ok(out)
}

/// A translated workload: the scenario's text, and the variables it sets
/// (`records`, `scanlength`) to go before the user's `--set`s.
#[derive(Debug)]
pub struct Translated {
    /// The scenario file's text (`core.toml` inside, no include).
    pub text: String,
    /// `records` and `scanlength` from the property file.
    pub sets: Vec<(String, Value)>,
    /// `operationcount`, when the file gives it: how many requests a run makes.
    pub operations: Option<u64>,
}

/// Translates the property file `text` (read from `path`) into a scenario.
pub fn translate(path: &Path, text: &str) -> Result<Translated, ScenarioError> {
    let fail = |line: usize, message: String| ScenarioError { at: format!("{}:{line}", path.display()), message };
    let props = properties(text).map_err(|(line, m)| fail(line, m))?;
    let get = |key: &str, default: &str| props.get(key).map_or((0, default.to_string()), |(l, v)| (*l, v.clone()));
    let number = |key: &str, default: &str| -> Result<f64, ScenarioError> {
        let (line, v) = get(key, default);
        v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| fail(line, format!("{key}: {v:?} is not a non-negative number")))
    };
    // Every property the translation cannot honour — unknown, or a value it cannot take — all named at once.
    let unknown: Vec<(usize, String)> = props
        .iter()
        .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
        .map(|(key, (line, _))| (*line, format!("{key}: not a CoreWorkload property aggro translates")))
        .collect();
    let known = if unknown.is_empty() { String::new() } else { format!(" (it knows {})", KNOWN.join(", ")) };
    let mut refused: Vec<(usize, String)> = unknown;
    refused.extend(FIXED.iter().filter_map(|(key, default, wanted, why)| {
        let (line, v) = get(key, default);
        (!wanted.contains(&v.as_str())).then(|| (line, format!("{key}={v}: {why}")))
    }));
    // The record's counts: whole numbers in what a table and a request can hold.
    let mut count = |key: &str, default: &str, most: usize| {
        let (line, v) = get(key, default);
        let n = v.parse::<usize>().ok().filter(|n| (1..=most).contains(n));
        if n.is_none() {
            refused.push((line, format!("{key}={v}: a whole number from 1 to {most}")));
        }
        n.unwrap_or(1)
    };
    let (fields, length) = (count("fieldcount", "10", MOST_FIELDS), count("fieldlength", "100", MOST_LENGTH));
    refused.sort();
    match refused.as_slice() {
        [] => {}
        [(line, why)] => return Err(fail(*line, format!("{why}{known}"))),
        all => {
            let each: Vec<String> = all.iter().map(|(line, why)| format!("line {line}: {why}")).collect();
            let message = format!("{} properties this translation cannot honour: {}{known}", all.len(), each.join("; "));
            return Err(ScenarioError { at: path.display().to_string(), message });
        }
    }

    let (line, dist) = get("requestdistribution", "uniform");
    let operations = props.contains_key("operationcount").then(|| number("operationcount", "0")).transpose()?.map(|n| n as u64);
    let distribution = match dist.as_str() {
        // As CoreWorkload makes its generator: over the records at population.
        "uniform" => "distribution = \"uniform\"\nspace = \"records\"".to_string(),
        "latest" | "sequential" => format!("distribution = \"{dist}\""),
        // CoreWorkload's "zipfian" is its scrambled Zipfian, made over the records, twice the inserts
        // operationcount × insertproportion predicts, and one more (its max is inclusive).
        "zipfian" => {
            let expected = (operations.unwrap_or(0) as f64 * number("insertproportion", "0")? * 2.0) as u64;
            format!("distribution = \"scrambled-zipfian\"\nspace = \"records + {}\"", expected + 1)
        }
        "hotspot" => format!(
            "distribution = \"hotspot\"\nhot_fraction = {}\nhot_share = {}",
            number("hotspotdatafraction", "0.2")?,
            number("hotspotopnfraction", "0.8")?
        ),
        "exponential" => format!(
            "distribution = \"exponential\"\npercentile = {}\nfraction = {}",
            number("exponential.percentile", "95")?,
            number("exponential.frac", "0.8571428571")?
        ),
        other => return Err(fail(line, format!("requestdistribution={other}: one of uniform, zipfian, latest, hotspot, sequential, exponential"))),
    };
    let (line, order) = get("insertorder", "hashed");
    let order = match order.as_str() {
        "hashed" => "hashed",
        "ordered" => "plain",
        other => return Err(fail(line, format!("insertorder={other}: hashed or ordered"))),
    };
    let records = number("recordcount", "1000")?;
    let scanlength = number("maxscanlength", "1000")?;
    let layout = Layout {
        fields,
        length,
        lengths: get("fieldlengthdistribution", "constant").1,
        read_all: get("readallfields", "true").1 == "true",
        write_all: get("writeallfields", "false").1 == "true",
    };
    // Each operation's draws: the record, and the field a read or an update of one field touches.
    let lets = |first: &str, fields: &[Option<String>]| {
        let mut all = vec![first.to_string()];
        all.extend(fields.iter().flatten().cloned());
        let all: Vec<String> = all.iter().map(|l| format!("\"{l}\"")).collect();
        format!("{{ let = [{}] }}", all.join(", "))
    };
    let (read_field, write_field) = (layout.field_choice(false), layout.field_choice(true));
    // One field variable `f` for a read-modify-write, as YCSB reads and writes the field it chose.
    let either = read_field.clone().or(write_field.clone());
    let mix = [
        ("read", "readproportion", "0.95", format!("[{}, {{ use = \"read\" }}]", lets("r = draw(record)", &[read_field]))),
        ("update", "updateproportion", "0.05", format!("[{}, {{ use = \"update\" }}]", lets("r = draw(record)", &[write_field]))),
        ("insert", "insertproportion", "0", "[{ let = [\"r = insert(record)\"] }, { use = \"insert\" }]".to_string()),
        ("scan", "scanproportion", "0", "[{ let = [\"r = draw(record)\", \"len = random(1, scanlength)\"] }, { use = \"scan\" }]".to_string()),
        (
            "read-modify-write",
            "readmodifywriteproportion",
            "0",
            format!("[{}, {{ use = \"read\" }}, {{ use = \"update\" }}]", lets("r = draw(record)", &[either])),
        ),
    ];
    let mut transactions = String::new();
    for (name, key, default, steps) in mix {
        let weight = number(key, default)?;
        if weight > 0.0 {
            transactions.push_str(&format!("\n[[transaction]]\nname = \"{name}\"\nweight = {weight}\nstep = {steps}\n"));
        }
    }
    if transactions.is_empty() {
        return Err(ScenarioError { at: path.display().to_string(), message: "every proportion is 0: nothing to run".into() });
    }
    let stem = path.file_stem().map_or_else(|| "workload".into(), |s| s.to_string_lossy().into_owned());
    let text = format!(
        "name = \"ycsb-{stem}\"\ndescription = \"YCSB workload file {} (CoreWorkload), translated\"\n{}\n[keys.record]\ncount = \"records\"\nprefix = \"user\"\norder = \"{order}\"\n{distribution}\n{transactions}",
        path.display(),
        layout.body()
    );
    Ok(Translated {
        text,
        sets: vec![("records".into(), Value::Int(records as i64)), ("scanlength".into(), Value::Int(scanlength as i64))],
        operations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::file::Source;
    use aggro_core::scenario::Family;

    /// YCSB 0.17's `workloads/workload[a-f]`, their keys as shipped.
    fn shipped(w: char) -> String {
        let mix = match w {
            'a' => "readproportion=0.5\nupdateproportion=0.5\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
            'b' => "readproportion=0.95\nupdateproportion=0.05\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
            'c' => "readproportion=1\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nrequestdistribution=zipfian",
            'd' => "readproportion=0.95\nupdateproportion=0\nscanproportion=0\ninsertproportion=0.05\nrequestdistribution=latest",
            'e' => {
                "readproportion=0\nupdateproportion=0\nscanproportion=0.95\ninsertproportion=0.05\nrequestdistribution=zipfian\nmaxscanlength=100\nscanlengthdistribution=uniform"
            }
            _ => {
                "readproportion=0.5\nupdateproportion=0\nscanproportion=0\ninsertproportion=0\nreadmodifywriteproportion=0.5\nrequestdistribution=zipfian"
            }
        };
        format!(
            "# Yahoo! Cloud System Benchmark\nrecordcount=1000\noperationcount=1000\nworkload=site.ycsb.workloads.CoreWorkload\n\nreadallfields=true\n\n{mix}\n"
        )
    }

    #[test]
    fn ycsb_shipped_workloads_translate_to_the_shipped_scenarios() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ycsb");
        for w in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let path = Path::new("workloads").join(format!("workload{w}"));
            let text = shipped(w);
            assert!(looks_like(&path, &text), "{w}");
            let t = translate(&path, &text).unwrap_or_else(|e| panic!("{w}: {e}"));
            let translated = Source::from_text(&path, t.text).and_then(|s| s.compile(Family::Sql, &t.sets)).unwrap_or_else(|e| panic!("{w}: {e}"));
            let theirs = Source::load(&dir.join(format!("{w}.toml"))).and_then(|s| s.compile(Family::Sql, &[])).expect("the shipped scenario");
            let mix = |s: &crate::scenario::Scenario| {
                let mut m = s.transactions.iter().map(|t| (t.name.clone(), t.weight)).collect::<Vec<_>>();
                m.sort_by(|a, b| a.0.cmp(&b.0));
                m
            };
            assert_eq!(mix(&translated), mix(&theirs), "workload {w}");
            assert_eq!(format!("{:?}", translated.gens), format!("{:?}", theirs.gens), "workload {w}: key space and sizes");
        }
    }

    #[test]
    fn what_the_layout_cannot_honour_is_refused_by_line_and_key() {
        let path = Path::new("my-workload");
        let base = shipped('a');
        for (extra, said) in [
            ("fieldcount=0", "fieldcount=0: a whole number from 1 to 1000"),
            ("writeallfields=yes", "writeallfields=yes: true or false"),
            ("scanlengthdistribution=zipfian", "scanlengthdistribution=zipfian: scan lengths are uniform"),
            ("requestdistribution=pareto", "requestdistribution=pareto: one of"),
            ("recrodcount=5", "recrodcount: not a CoreWorkload property"),
            ("readproportion=lots", "readproportion: \"lots\" is not a non-negative number"),
        ] {
            let text = format!("{base}{extra}\n");
            let e = translate(path, &text).expect_err(extra);
            assert!(e.to_string().starts_with("my-workload:") && e.to_string().contains(said), "{extra}: {e}");
        }
        // Every property the translation cannot honour, in one message.
        let e = translate(path, &format!("{base}fieldcount=5000\nfieldlength=long\nmeasurementtype=hdrhistogram\n")).expect_err("three");
        let said = e.to_string();
        assert!(said.contains("3 properties") && said.contains("fieldcount=5000") && said.contains("fieldlength=long"), "{said}");
        assert!(said.contains("line 15: measurementtype: not a CoreWorkload property") && said.contains("(it knows workload, "), "{said}");
        let e = translate(path, "workload=site.ycsb.workloads.CoreWorkload\nreadproportion=0\nupdateproportion=0\n").expect_err("no mix");
        assert!(e.to_string().contains("every proportion is 0"), "{e}");
        assert!(!looks_like(Path::new("a.toml"), &base), "a .toml file is a scenario");
    }

    #[test]
    fn the_record_s_properties_shape_the_layout_on_every_family() {
        let text =
            format!("{}fieldcount=4\nfieldlength=20\nfieldlengthdistribution=uniform\nreadallfields=false\nwriteallfields=true\n", shipped('f'));
        let t = translate(Path::new("wide"), &text).expect("translates");
        for family in [Family::Sql, Family::Redis, Family::Kv, Family::Dynamo, Family::Cql] {
            Source::from_text(Path::new("wide"), t.text.clone())
                .and_then(|s| s.compile(family, &t.sets))
                .unwrap_or_else(|e| panic!("{family:?}: {e}"));
        }
        let sc = Source::from_text(Path::new("wide"), t.text.clone()).and_then(|s| s.compile(Family::Sql, &t.sets)).unwrap();
        let sql: Vec<String> = sc.commands.iter().map(|c| format!("{c:?}")).collect();
        let has = |s: &str| sql.iter().any(|c| c.contains(s));
        assert!(has("SELECT field3 FROM usertable WHERE ycsb_key = $1") && !has("field4"), "a read of one of 4 fields: {sql:?}");
        assert!(has("UPDATE usertable SET field0 = $1, field1 = $2, field2 = $3, field3 = $4 WHERE ycsb_key = $5"), "{sql:?}");
        assert!(t.text.contains("[sizes.field]\ndistribution = \"uniform\"\nmin = 1\nmax = 20"), "{}", t.text);
        assert!(t.text.contains("\"r = draw(record)\", \"f = random(0, 3)\""), "the field a read-modify-write reads: {}", t.text);
        assert!(!t.text.contains("[sizes.record]"), "a key-value record is its fields' draws when they vary");
        let cql = Source::from_text(Path::new("wide"), t.text.clone()).and_then(|s| s.compile(Family::Cql, &t.sets)).unwrap();
        let cql: Vec<String> = cql.commands.iter().map(|c| format!("{c:?}")).collect();
        let has = |s: &str| cql.iter().any(|c| c.contains(s));
        assert!(has("SELECT field3 FROM usertable WHERE y_id = ?") && !has("field4"), "{cql:?}");
        assert!(has("UPDATE usertable SET field0 = ?, field1 = ?, field2 = ?, field3 = ? WHERE y_id = ?"), "{cql:?}");
        assert!(t.text.contains("cql = \"INSERT INTO usertable (y_id, field0, field1, field2, field3) VALUES (?, ?, ?, ?, ?)\""), "{}", t.text);
    }

    #[test]
    fn hotspot_and_counts_carry_their_parameters() {
        let text = "workload=site.ycsb.workloads.CoreWorkload\nrecordcount=5000\nreadproportion=1\nrequestdistribution=hotspot\nhotspotdatafraction=0.1\nhotspotopnfraction=0.9\n";
        let t = translate(Path::new("hot"), text).expect("translates");
        assert!(t.text.contains("distribution = \"hotspot\"\nhot_fraction = 0.1\nhot_share = 0.9"), "{}", t.text);
        assert_eq!(t.sets[0], ("records".into(), Value::Int(5000)));
        assert_eq!(t.operations, None, "no operationcount: no limit");
        assert_eq!(translate(Path::new("a"), &shipped('a')).expect("a").operations, Some(1000));
        Source::from_text(Path::new("hot"), t.text).and_then(|s| s.compile(Family::Redis, &t.sets)).expect("compiles for redis");
    }
}
