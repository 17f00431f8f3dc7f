//! Everything the game puts in packets: bit codes, actor states, messages.

pub mod bits;
pub mod msg;
pub mod state;
pub mod view;
