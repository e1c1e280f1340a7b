//! Scripted-agent scenario files from hostile bytes: parsing never panics, and a scenario that
//! parses replays (and amputates) without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memlineage::counterfactual::amputation::{amputate, Protocol, Scenario, ScriptedAgent};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(s) = Scenario::from_json(text) else {
        return;
    };
    if s.steps.len() > 64 {
        return;
    }
    let carrier = s.memories.first().map(|m| m.id).unwrap_or_default();
    let p = Protocol {
        repeats: 2,
        ..Protocol::default()
    };
    let _ = amputate(&mut ScriptedAgent, &s, carrier, s.unused_id(), &p);
});
