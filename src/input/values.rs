//! Deserializers for scenario values that check while they read, so every error carries the
//! value's span: ranges, ratios, faults, message kinds.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::Span;
use crate::sim::choice::Ratio;
use crate::sim::msg::MsgKind;

/// A message kind, checked by name.
pub struct MsgKindName(pub MsgKind);

impl<'de> Deserialize<'de> for MsgKindName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MsgKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .map(MsgKindName)
            .ok_or_else(|| {
                let names: Vec<_> = MsgKind::ALL.iter().map(|k| k.name()).collect();
                de::Error::custom(format!(
                    "unknown message kind `{s}`, expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// `{ min = a, max = b }` with `a <= b`, or a single integer.
#[derive(Clone, Copy)]
pub struct SpanValue(pub Span);

impl SpanValue {
    /// The range read, or `default` when the key is absent.
    pub fn or(v: Option<SpanValue>, default: Span) -> Span {
        v.map_or(default, |s| s.0)
    }
}

impl<'de> Deserialize<'de> for SpanValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SpanValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer or a table { min = .., max = .. }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<SpanValue, E> {
                let v = u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative")))?;
                Ok(SpanValue(Span::new(v, v)))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<SpanValue, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "min" => min = Some(map.next_value::<u64>()?),
                        "max" => max = Some(map.next_value::<u64>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected `min` or `max`"
                            )));
                        }
                    }
                }
                let min = min.ok_or_else(|| de::Error::missing_field("min"))?;
                let max = max.ok_or_else(|| de::Error::missing_field("max"))?;
                if min > max {
                    return Err(de::Error::custom(format!(
                        "min ({min}) is greater than max ({max})"
                    )));
                }
                Ok(SpanValue(Span::new(min, max)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `"num/den"` with `0 <= num <= den`, `den > 0`.
#[derive(Clone, Copy)]
pub struct RatioValue(pub Ratio);

fn parse_ratio(s: &str) -> std::result::Result<Ratio, String> {
    let err = || format!("`{s}` is not a ratio \"num/den\" with 0 <= num <= den and den > 0");
    let (n, d) = s.split_once('/').ok_or_else(err)?;
    let num: u64 = n.trim().parse().map_err(|_| err())?;
    let den: u64 = d.trim().parse().map_err(|_| err())?;
    if den == 0 || num > den {
        return Err(err());
    }
    Ok(Ratio::new(num, den))
}

impl<'de> Deserialize<'de> for RatioValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_ratio(&s).map(RatioValue).map_err(de::Error::custom)
    }
}

/// A fault: `"share"` or `{ share = "..", rate = "..", max = n }`.
pub struct FaultValue {
    pub share: Ratio,
    pub rate: Option<Ratio>,
    pub max: Option<u32>,
}

impl<'de> Deserialize<'de> for FaultValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FaultValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a share \"num/den\" or a table { share, rate, max }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<FaultValue, E> {
                Ok(FaultValue {
                    share: parse_ratio(v).map_err(E::custom)?,
                    rate: None,
                    max: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<FaultValue, A::Error> {
                let (mut share, mut rate, mut max) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "share" => share = Some(map.next_value::<RatioValue>()?.0),
                        "rate" => rate = Some(map.next_value::<RatioValue>()?.0),
                        "max" => max = Some(map.next_value::<u32>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown field `{other}`, expected `share`, `rate` or `max`"
                            )));
                        }
                    }
                }
                Ok(FaultValue {
                    share: share.ok_or_else(|| de::Error::missing_field("share"))?,
                    rate,
                    max,
                })
            }
        }
        d.deserialize_any(V)
    }
}
