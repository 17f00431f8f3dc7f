//! The names a script reads and writes as globals, checked before any bot
//! runs: a misspelt API name (`sleeep`, `http.pst`) or a global assignment is
//! one line with its line number, not thousands of bots stopped at run time.
//! The script is compiled in a separate LuaJIT state that never runs it, and
//! its bytecode listed with LuaJIT's own `jit.util` (every global read or
//! written, and the field read right after a global, such as `http.post`);
//! the opcodes' numbers are learnt from probe functions, not written down.

use mlua::{Lua, LuaOptions, StdLib, Table, Value};
use std::collections::HashMap;

/// Lists each global access of a chunk and its nested functions: {line, name, "get"|"set"|"field", field},
/// and each `stage` called with a string: {line, "stage", "stage", the string}.
const LISTER: &str = r#"
local chunk = ...
local jutil = require("jit.util")
local funcbc, funck, funcinfo = jutil.funcbc, jutil.funck, jutil.funcinfo
local floor = math.floor
local function opcode(f, pc) return funcbc(f, pc) % 256 end
local GGET = opcode(function() return aggro_probe end, 1)
local GSET = opcode(function() aggro_probe = 1 end, 2)
local TGETS = opcode(function(t) return t.field end, 1)
local KSTR = opcode(function() aggro_probe("x") end, 2)
local found = {}
local function walk(f)
  local reg, name
  for pc = 1, 1e9 do
    local ins = funcbc(f, pc)
    if not ins then break end
    local op, a = ins % 256, floor(ins / 256) % 256
    local line = funcinfo(f, pc).currentline
    if op == GGET or op == GSET then
      local global = funck(f, -floor(ins / 65536) - 1)
      found[#found + 1] = { line, global, op == GSET and "set" or "get" }
      reg, name = a, op == GGET and global or nil
    elseif op == TGETS and name and floor(ins / 16777216) == reg then
      found[#found + 1] = { line, name, "field", funck(f, -(floor(ins / 65536) % 256) - 1) }
      name = nil
    elseif op == KSTR and name == "stage" then
      found[#found + 1] = { line, name, "stage", funck(f, -floor(ins / 65536) - 1) }
      name = nil
    else
      name = nil
    end
  end
  for n = 1, funcinfo(f).gcconsts do
    local k = funck(f, -n)
    if type(k) == "proto" then walk(k) end
  end
end
walk(chunk)
return found
"#;

/// What a script may name: each global of the bot state, with the keys of those that are plain tables.
pub type Names = HashMap<String, Option<Vec<String>>>;

/// The names of `globals` (the bot state's, before the script runs).
pub fn names_of(globals: &Table) -> mlua::Result<Names> {
    let mut names = Names::new();
    for pair in globals.pairs::<Value, Value>() {
        let (Value::String(k), v) = pair? else { continue };
        let fields = match v {
            // A table with a metatable answers names of its own (`bot.name`): its fields are not listed.
            Value::Table(t) if t.metatable().is_some() => None,
            Value::Table(t) => Some(t.pairs::<Value, Value>().filter_map(|p| p.ok()?.0.as_string().map(|s| s.to_string_lossy())).collect()),
            _ => None,
        };
        names.insert(k.to_string_lossy(), fields);
    }
    Ok(names)
}

/// Checks `source` (named `name`) against `names`: the first unknown name or global assignment as
/// `name:LINE: …`. Returns the stages the script names with a string (`stage("matched")`), each once,
/// in the order of its code (the main chunk's first).
pub fn check(source: &str, name: &str, names: &Names) -> Result<Vec<String>, String> {
    // SAFETY: this state only compiles the script and lists its bytecode with jit.util; it never runs the
    // script, which is why it may load every library (jit.util needs `require`).
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
    let chunk = lua.load(source).set_name(format!("={name}")).into_function().map_err(|e| one_line(&e))?;
    let lister = lua.load(LISTER).set_name("=aggro check").into_function().map_err(|e| e.to_string())?;
    let found: Vec<Table> = lister.call(chunk).map_err(|e| format!("cannot list {name}'s names: {e}"))?;
    let mut stages = Vec::new();
    for entry in found {
        let line: u32 = entry.get(1).map_err(|e| e.to_string())?;
        let global: String = entry.get(2).map_err(|e| e.to_string())?;
        let kind: String = entry.get(3).map_err(|e| e.to_string())?;
        let problem = match (kind.as_str(), names.get(&global)) {
            ("stage", _) => {
                let stage: String = entry.get(4).map_err(|e| e.to_string())?;
                if !stages.contains(&stage) {
                    stages.push(stage);
                }
                None
            }
            ("set", _) => Some(format!("assignment to undeclared global '{global}': the bots of a thread share globals; use local")),
            (_, None) => Some(format!("unknown name '{global}' (not aggro's API nor a local)")),
            ("field", Some(Some(fields))) => {
                let field: String = entry.get(4).map_err(|e| e.to_string())?;
                (!fields.contains(&field)).then(|| format!("unknown name '{global}.{field}' (not aggro's API)"))
            }
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(format!("{name}:{line}: {problem}"));
        }
    }
    Ok(stages)
}

/// An mlua error as one line: `bot.lua:3: unexpected symbol near '='`.
pub fn one_line(e: &mlua::Error) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("syntax error: ").or_else(|| line.strip_prefix("runtime error: ")).unwrap_or(line).to_string()
}
