//! The extension wire protocol (version 1): every frame in both directions as serde types,
//! and the newline-delimited codec. Unknown fields are ignored; unknown frame types decode
//! to [`Decoded::Unknown`] so newer peers do not break older readers.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version sent in `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest line zot's reader accepts (its `bufio.Scanner` buffer); a longer line ends
/// the conversation.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `hello`: the first frame an extension sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

/// `register_command`: binds `/name` to the extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterCommand {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// `register_tool`: exposes a tool to the model; `schema` should be a JSON Schema object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub schema: Option<Value>,
}

/// `subscribe`: lifecycle events to observe and to intercept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intercept: Vec<String>,
}

/// One block of a tool result: `text`, or `image` with base64 `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlock {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
}

/// `tool_result`: the reply to a `tool_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub id: String,
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
}

/// `command_response`: the reply to `command_invoked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    pub id: String,
    #[serde(default)]
    pub action: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prompt: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub insert: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// `notify`: a one-way status note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notify {
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub message: String,
}

/// `event_intercept_response`: the reply to `event_intercept`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventInterceptResponse {
    pub id: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub block: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replace_text: String,
}

/// `error`: a frame either side could not process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default)]
    pub message: String,
}

/// Every frame an extension sends to zot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromExt {
    Hello(Hello),
    RegisterCommand(RegisterCommand),
    RegisterTool(RegisterTool),
    Ready,
    Subscribe(Subscribe),
    ToolResult(ToolResult),
    CommandResponse(CommandResponse),
    Notify(Notify),
    EventInterceptResponse(EventInterceptResponse),
    ShutdownAck,
    Error(ErrorFrame),
}

/// `hello_ack`: zot's reply to `hello`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloAck {
    pub protocol_version: u32,
    #[serde(default)]
    pub zot_version: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
}

/// `command_invoked`: the user ran a registered slash command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInvoked {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub args: String,
}

/// `tool_call`: the model called a registered tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

/// `event`: a one-way lifecycle notification; which fields are set depends on `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub event: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stop: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// `event_intercept`: like `event`, but the extension may block it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventIntercept {
    pub id: String,
    pub event: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub step: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// Every frame zot sends to an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromHost {
    HelloAck(HelloAck),
    CommandInvoked(CommandInvoked),
    ToolCall(ToolCall),
    Event(Event),
    EventIntercept(EventIntercept),
    Shutdown,
    Error(ErrorFrame),
}

/// A frame family with a known set of `type` values.
pub trait Frame: Serialize + DeserializeOwned {
    /// The `type` values this family defines.
    const TYPES: &'static [&'static str];
}

impl Frame for FromExt {
    const TYPES: &'static [&'static str] = &[
        "hello",
        "register_command",
        "register_tool",
        "ready",
        "subscribe",
        "tool_result",
        "command_response",
        "notify",
        "event_intercept_response",
        "shutdown_ack",
        "error",
    ];
}

impl Frame for FromHost {
    const TYPES: &'static [&'static str] = &[
        "hello_ack",
        "command_invoked",
        "tool_call",
        "event",
        "event_intercept",
        "shutdown",
        "error",
    ];
}

/// A decoded line: a known frame, or a well-formed frame of a type this version does not know.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded<F> {
    Frame(F),
    Unknown(String),
}

/// Why a line is not a usable frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Empty, or not JSON at all.
    NotJson(String),
    /// JSON, but not an object with a string `type`.
    NoType,
    /// A known type whose fields do not fit (missing `name`, wrong types, ...).
    Invalid { kind: String, reason: String },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::NotJson(why) => write!(f, "not JSON ({why})"),
            DecodeError::NoType => f.write_str("not a JSON object with a string \"type\""),
            DecodeError::Invalid { kind, reason } => write!(f, "invalid {kind} frame: {reason}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Parses one line (without its newline) into a JSON value and a frame of family `F`.
pub fn decode<F: Frame>(line: &str) -> Result<(Value, Decoded<F>), DecodeError> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Err(DecodeError::NotJson("an empty line".into()));
    }
    let value: Value =
        serde_json::from_str(trimmed).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(DecodeError::NoType);
    };
    if !F::TYPES.contains(&kind) {
        let kind = kind.to_string();
        return Ok((value, Decoded::Unknown(kind)));
    }
    match F::deserialize(&value) {
        Ok(frame) => Ok((value, Decoded::Frame(frame))),
        Err(e) => Err(DecodeError::Invalid {
            kind: kind.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Serialises a frame as one line, newline included.
pub fn encode<F: Serialize>(frame: &F) -> String {
    // These types hold only strings, numbers and JSON values, which always serialise.
    let mut line = serde_json::to_string(frame).expect("frames always serialise");
    line.push('\n');
    line
}

impl FromExt {
    /// The frame's `type` value.
    pub fn kind(&self) -> &'static str {
        match self {
            FromExt::Hello(_) => "hello",
            FromExt::RegisterCommand(_) => "register_command",
            FromExt::RegisterTool(_) => "register_tool",
            FromExt::Ready => "ready",
            FromExt::Subscribe(_) => "subscribe",
            FromExt::ToolResult(_) => "tool_result",
            FromExt::CommandResponse(_) => "command_response",
            FromExt::Notify(_) => "notify",
            FromExt::EventInterceptResponse(_) => "event_intercept_response",
            FromExt::ShutdownAck => "shutdown_ack",
            FromExt::Error(_) => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every extension → host example in extensions.md, plus the frames it shows only in prose.
    const FROM_EXT: &[&str] = &[
        r#"{"type":"hello","name":"hello-py","version":"1.0.0","capabilities":["commands"]}"#,
        r#"{"type":"register_command","name":"hellopy","description":"say hi (python)"}"#,
        r#"{"type":"command_response","id":"7","action":"prompt","prompt": "Greet me very briefly. Add one emoji."}"#,
        r#"{"type":"shutdown_ack"}"#,
        r#"{"type":"hello","name":"weather","version":"1.0.0",
 "capabilities":["commands","tools"]}"#,
        r#"{"type":"register_command","name":"weather",
 "description":"current weather for a city"}"#,
        r#"{"type":"register_tool","name":"weather",
 "description":"Get the current weather for a city.",
 "schema":{
   "type":"object",
   "properties":{"city":{"type":"string"}},
   "required":["city"]
 }}"#,
        r#"{"type":"ready"}"#,
        r#"{"type":"tool_result","id":"...",
 "content":[{"type":"text","text":"Berlin: 16°C, fog"}]}"#,
        r#"{"type":"subscribe",
 "events":["session_start","turn_start","tool_call","turn_end","assistant_message"],
 "intercept":["tool_call"]}"#,
        r#"{"type":"event_intercept_response","id":"...",
 "block":true,"reason":"refused: matches danger pattern \"rm -rf\""}"#,
        r#"{"type":"command_response","id":"...","action":"prompt",
 "prompt":"Show today's weather for Berlin in one line."}"#,
        r#"{"type":"notify","level":"info",
 "message":"refreshed cache (12 entries)"}"#,
        r#"{"type":"tool_result","id":"1","content":[{"type":"image","mime_type":"image/png","data":"aGk="}],"is_error":true}"#,
        r#"{"type":"command_response","id":"2","action":"noop","error":"boom"}"#,
        r#"{"type":"error","id":"3","message":"cannot parse"}"#,
        r#"{"type":"event_intercept_response","id":"4","modified_args":{"path":"x"},"replace_text":"y"}"#,
    ];

    /// Every host → extension example in extensions.md, plus `shutdown` and `error`.
    const FROM_HOST: &[&str] = &[
        r#"{"type":"hello_ack","protocol_version":1,
 "zot_version":"0.0.7","provider":"anthropic",
 "model":"claude-opus-4-7","cwd":"/Users/pat/Developer/zot"}"#,
        r#"{"type":"command_invoked","id":"...",
 "name":"weather","args":"berlin"}"#,
        r#"{"type":"tool_call","id":"...","name":"weather",
 "args":{"city":"Berlin"}}"#,
        r#"{"type":"event","event":"turn_start","step":1}"#,
        r#"{"type":"event","event":"tool_call",
 "tool_id":"...","tool_name":"read","tool_args":{"path":"foo.go"}}"#,
        r#"{"type":"event","event":"turn_end","stop":"end_turn"}"#,
        r#"{"type":"event_intercept","id":"...","event":"tool_call",
 "tool_id":"...","tool_name":"bash",
 "tool_args":{"command":"rm -rf /tmp/foo"}}"#,
        r#"{"type":"shutdown"}"#,
        r#"{"type":"error","message":"unknown frame"}"#,
        r#"{"type":"hello_ack","protocol_version":1,"zot_version":"1","provider":"p","model":"m","cwd":"/c","extension_dir":"/e","data_dir":"/e"}"#,
    ];

    fn round_trips<F: Frame + std::fmt::Debug>(example: &str) {
        let original: Value = serde_json::from_str(example).unwrap();
        let (value, decoded) = decode::<F>(&example.replace('\n', " ")).unwrap();
        assert_eq!(value, original);
        let Decoded::Frame(frame) = decoded else {
            panic!("{example} decoded as unknown");
        };
        let line = encode(&frame);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        let again: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(again, original, "{frame:?}");
    }

    #[test]
    fn every_documented_frame_round_trips() {
        FROM_EXT.iter().for_each(|e| round_trips::<FromExt>(e));
        FROM_HOST.iter().for_each(|e| round_trips::<FromHost>(e));
    }

    #[test]
    fn every_type_is_covered_by_an_example() {
        for kind in FromExt::TYPES {
            let tag = format!("\"type\":\"{kind}\"");
            assert!(FROM_EXT.iter().any(|e| e.contains(&tag)), "{kind}");
        }
        for kind in FromHost::TYPES {
            let tag = format!("\"type\":\"{kind}\"");
            assert!(FROM_HOST.iter().any(|e| e.contains(&tag)), "{kind}");
        }
    }

    /// When the spec sits beside the repository, every frame example in it must be one of
    /// the embedded examples above (so the copies cannot drift); skipped when it is absent.
    #[test]
    fn embedded_examples_match_the_spec_when_present() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/spec/extensions.md");
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let embedded: Vec<Value> = FROM_EXT
            .iter()
            .chain(FROM_HOST)
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        for block in text.split("```json").skip(1) {
            let body = block.split("```").next().unwrap_or_default();
            for value in serde_json::Deserializer::from_str(body).into_iter::<Value>() {
                let value = value.unwrap();
                if value.get("type").is_some() {
                    assert!(embedded.contains(&value), "not embedded: {value}");
                }
            }
        }
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let (_, d) = decode::<FromExt>(r#"{"type":"ready","extra":{"a":1}}"#).unwrap();
        assert_eq!(d, Decoded::Frame(FromExt::Ready));
        let (_, d) =
            decode::<FromExt>(r#"{"type":"register_tool","name":"t","schema":{},"deferred":true}"#)
                .unwrap();
        assert!(matches!(d, Decoded::Frame(FromExt::RegisterTool(t)) if t.name == "t"));
    }

    #[test]
    fn unknown_types_and_bad_lines() {
        let (_, d) = decode::<FromExt>(r#"{"type":"open_panel","panel":{}}"#).unwrap();
        assert_eq!(d, Decoded::Unknown("open_panel".into()));
        assert!(matches!(
            decode::<FromExt>("starting up..."),
            Err(DecodeError::NotJson(_))
        ));
        assert!(matches!(
            decode::<FromExt>(""),
            Err(DecodeError::NotJson(_))
        ));
        assert_eq!(decode::<FromExt>("[1]").unwrap_err(), DecodeError::NoType);
        assert_eq!(
            decode::<FromExt>(r#"{"type":5}"#).unwrap_err(),
            DecodeError::NoType
        );
        let err = decode::<FromExt>(r#"{"type":"register_command"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid register_command frame: missing field `name`"
        );
    }

    #[test]
    fn kind_matches_the_tag() {
        for example in FROM_EXT {
            let (value, d) = decode::<FromExt>(&example.replace('\n', " ")).unwrap();
            let Decoded::Frame(frame) = d else { panic!() };
            assert_eq!(value["type"], frame.kind());
        }
    }
}
