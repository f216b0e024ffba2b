//! Wire words: every enum that crosses a boundary as one word (an argument's choice, an answer's
//! `status`, a pane's activity, a sandbox mode, a saved pipeline's stage) is declared once with
//! `words!`, which gives it its names, its parse, and serde both ways by those names, so what is
//! written and what is read back can never differ.
//!
//! A leaf: the domain, the tool framework and the front-ends all speak these words, so they live
//! below all of them. The tool framework adds the schema and the argument parse on top
//! (`tool::choice::Choice`).

/// An enum declared with `words!`: each value with its one word on the wire, in declared order
/// (where the enum is a tool's choice, the first is its default).
pub(crate) trait Words: Copy + PartialEq + 'static {
    /// Every value with its word, in declared order.
    const VALUES: &'static [(&'static str, Self)];

    /// The words, in order.
    fn names() -> Vec<&'static str> {
        Self::VALUES.iter().map(|(name, _)| *name).collect()
    }

    /// The value's word.
    fn name(self) -> &'static str {
        Self::VALUES.iter().find(|(_, value)| *value == self).map_or("", |(name, _)| *name)
    }

    /// The value whose word is exactly `word`.
    fn from_word(word: &str) -> Option<Self> {
        Self::VALUES.iter().find(|(name, _)| *name == word).map(|(_, value)| *value)
    }

    /// What is wrong with `word`: `"plum" is not one of apple, pear`.
    fn not_one_of(word: &str) -> String {
        format!("{word:?} is not one of {}", Self::names().join(", "))
    }
}

/// Declares a `Words` enum: each variant with its word, serialized and read back by it, and shown
/// by it (`Display`).
///
/// ```ignore
/// words! {
///     /// What `fugue_get_output` returns.
///     pub(crate) enum Format { Text = "text", Raw = "raw", Screen = "screen" }
/// }
/// ```
macro_rules! words {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::words::Words for $name {
            const VALUES: &'static [(&'static str, $name)] = &[$(($wire, $name::$variant)),+];
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::words::Words::name(*self))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($crate::words::Words::name(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let word = String::deserialize(d)?;
                <$name as $crate::words::Words>::from_word(&word).ok_or_else(|| {
                    serde::de::Error::custom(<$name as $crate::words::Words>::not_one_of(&word))
                })
            }
        }
    };
}
pub(crate) use words;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    words! {
        enum Fruit { Apple = "apple", Pear = "pear" }
    }

    #[test]
    fn a_word_is_written_and_read_back_by_one_list() {
        assert_eq!(Fruit::names(), ["apple", "pear"]);
        assert_eq!(serde_json::to_value(Fruit::Pear).unwrap(), json!("pear"));
        assert_eq!(serde_json::from_value::<Fruit>(json!("pear")).unwrap(), Fruit::Pear);
        assert_eq!(Fruit::from_word("apple"), Some(Fruit::Apple));
        assert_eq!(Fruit::Apple.to_string(), "apple");
        let err = serde_json::from_value::<Fruit>(json!("plum")).unwrap_err();
        assert_eq!(err.to_string(), "\"plum\" is not one of apple, pear");
    }
}
