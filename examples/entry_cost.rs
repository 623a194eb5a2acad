#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use serde::Deserialize;
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[derive(Deserialize)]
#[allow(dead_code)]
struct S<'a> { #[serde(borrow)] a: &'a str, #[serde(borrow)] b: &'a str, #[serde(borrow)] c: &'a str, #[serde(borrow)] d: &'a str, #[serde(borrow)] e: &'a str }
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let mode = std::env::args().nth(2).unwrap();
    let text = r#"{"a":"alpha","b":"bravo","c":"charlie","d":"delta","e":"echo","x":"skip me","y":"skip"}"#;
    for _ in 0..n {
        if mode == "od" {
            let mut de = placement_guard::k8s::ondemand::Deserializer::new(text);
            std::hint::black_box(S::deserialize(&mut de).unwrap());
        } else {
            let mut de = serde_json::Deserializer::from_str(text);
            std::hint::black_box(S::deserialize(&mut de).unwrap());
        }
    }
}
