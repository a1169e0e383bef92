//! coturn's `turnutils_uclient` through the relay: Send and Data indications (`-c -s`), with 1,
//! 10 and 50 clients at once; every message must come back.

mod support;

#[test]
fn every_message_comes_back() {
    support::every_message_returns(&["-c", "-s"]);
}
