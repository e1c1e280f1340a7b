//! What a user accepts in a gateway's elicitation form is their statement only where it holds
//! nothing the server's request suggested (`spec/mcp.md` §6.3): the server's IBAN, URL or
//! address with a word of the user's beside it (`US133000000121212121212 (Spotify)`) is still
//! the server's text. Found by attack review 39: the field was compared whole, so a name
//! added to the server's IBAN made the IBAN a statement of the user, which authorises it
//! (`spec/hooks.md` §4.4).

use memlineage::front::mcp::gateway::label::elicited_statement;
use serde_json::{json, Value};

const ATTACKER: &str = "US133000000121212121212";

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[test]
fn a_suggested_value_with_a_word_beside_it_is_not_the_users() {
    let request = json!({
        "message": format!("Confirm the payment to {ATTACKER}, receipt at https://evil.io/r"),
        "requestedSchema": {"type": "object", "properties": {
            "recipient": {"type": "string"}, "note": {"type": "string"}}}
    });
    for typed in [
        format!("{ATTACKER} (Spotify)"),
        "Spotify: US13 3000 0001 2121 2121 212".to_string(),
        "see https://evil.io/r for the receipt".to_string(),
    ] {
        let got = elicited_statement(&request, &accept(json!({ "recipient": typed })));
        assert_eq!(got, None, "{typed} was taken as the user's own statement");
    }
    // What the user writes of their own is still theirs.
    let own = elicited_statement(
        &request,
        &accept(json!({"recipient": "GB29NWBK60161331926819 (landlord)"})),
    );
    assert_eq!(
        own.as_deref(),
        Some(r#"{"recipient":"GB29NWBK60161331926819 (landlord)"}"#)
    );
}
