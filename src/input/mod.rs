//! Reading checked input: deserializers that check values while they read them, so every
//! error in a scenario or regression file carries the span of the value at fault.

pub mod values;
