// use crate::a::A;
/* crate::a::A /* nested crate::a::A */ still a comment: crate::a::A */
/// Docs: `crate::a::A`
pub struct B;

pub const TEXT: &str = "crate::a::A \" crate::a::A";
pub const RAW: &str = r#"crate::a::b "quoted" crate::a::A"#;
pub const BYTES: &[u8] = b"crate::a::A";
pub const QUOTE: char = '"';
pub const BRACE: char = '{';
pub const ESCAPED: char = '\'';

pub fn lifetime<'a>(x: &'a str) -> &'a str {
    x
}
