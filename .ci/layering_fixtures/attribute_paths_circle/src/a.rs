pub struct A {
    #[serde(with = "crate::b::codec")]
    pub x: u8,
    #[arg(long, default_value_t = crate::b::DEFAULT)]
    pub y: u8,
    #[serde(rename = "crate::b::not_a_path_key")]
    pub z: u8,
}
