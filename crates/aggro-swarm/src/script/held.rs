//! A Lua function or coroutine a bot keeps between calls into Lua, held in the state's registry.
//!
//! mlua keeps each `Function` or `Thread` handle on the stack of one auxiliary coroutine, and LuaJIT
//! bounds that stack at 8,000 values (`LUAI_MAXCSTACK`): one handle per bot made the 7,992nd bot's
//! `every` fail with "out of Lua stack". The registry is a table, bounded only by memory; a handle
//! is taken out of it only while the engine calls it.

use mlua::{FromLua, IntoLua, Lua, RegistryKey};
use std::marker::PhantomData;

/// A `T` (a function, a coroutine) kept in the registry.
#[derive(Debug)]
pub struct Held<T> {
    key: RegistryKey,
    kind: PhantomData<T>,
}

impl<T: IntoLua + FromLua> Held<T> {
    /// Keeps `value`.
    pub fn new(lua: &Lua, value: T) -> mlua::Result<Self> {
        Ok(Self { key: lua.create_registry_value(value)?, kind: PhantomData })
    }

    /// The value, for as long as the caller holds it.
    pub fn get(&self, lua: &Lua) -> mlua::Result<T> {
        lua.registry_value(&self.key)
    }
}
