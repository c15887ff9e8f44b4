//! The extension wire protocol (version 1): every frame in both directions as serde types,
//! and the newline-delimited codec. Unknown fields are ignored; unknown frame types decode
//! to [`Decoded::Unknown`] so newer peers do not break older readers. Go's encoder writes a
//! nil slice (or a nil `json.RawMessage`) as `null`, so every list and string field also
//! reads `null` as empty. What the host itself does, version by version, is in [`zot`].

pub mod zot;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol version sent in `hello_ack`.
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest line zot's reader accepts (its `bufio.Scanner` buffer); a longer line ends
/// the conversation.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Reads `null` as the type's default (an empty list or string), as Go's peers mean it.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// `hello`: the first frame an extension sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_default")]
    pub version: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub capabilities: Vec<String>,
}

/// `register_command`: binds `/name` to the extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterCommand {
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
}

/// `register_tool`: exposes a tool to the model; `schema` should be a JSON Schema object.
/// A `deferred` tool stays hidden until a tool result names it in `activate_tools`; an
/// `interactive` one waits for the user, so headless hosts refuse to call it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterTool {
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(default)]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub deferred: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub interactive: bool,
}

/// `subscribe`: lifecycle events to observe and to intercept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub events: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub intercept: Vec<String>,
}

/// One block of a tool result: `text`, or `image` with base64 `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlock {
    #[serde(rename = "type", deserialize_with = "null_default")]
    pub kind: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub text: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub mime_type: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub data: String,
}

/// `tool_result`: the reply to a `tool_call`; `activate_tools` reveals deferred tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    /// Always written, as Go does (`null` for a nil slice).
    #[serde(default, deserialize_with = "null_default")]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub is_error: bool,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub activate_tools: Vec<String>,
}

/// What a panel shows: a title, lines of text and a footer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelContent {
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub title: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub lines: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub footer: String,
}

/// A panel an extension shows inside zot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelSpec {
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
    #[serde(flatten)]
    pub content: PanelContent,
}

/// `command_response`: the reply to `command_invoked`; action `open_panel` carries the panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(default, deserialize_with = "null_default")]
    pub action: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub prompt: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub insert: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub display: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_panel: Option<PanelSpec>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub error: String,
}

/// `open_panel`: a panel opened at any time, not in answer to a command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenPanel {
    #[serde(default, deserialize_with = "null_default")]
    pub panel: PanelSpec,
}

/// `panel_render`: a new frame for an open panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRender {
    #[serde(default, deserialize_with = "null_default")]
    pub panel_id: String,
    #[serde(flatten)]
    pub content: PanelContent,
}

/// `panel_close` (either direction): the panel is gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelClose {
    #[serde(default, deserialize_with = "null_default")]
    pub panel_id: String,
}

/// `notify`: a one-way status note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notify {
    #[serde(default, deserialize_with = "null_default")]
    pub level: String,
    #[serde(default, deserialize_with = "null_default")]
    pub message: String,
}

/// `event_intercept_response`: the reply to `event_intercept`. `system_prompt` (a JSON
/// string) replaces the prompt of a `before_agent_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventInterceptResponse {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub block: bool,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_args: Option<Value>,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub replace_text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<Value>,
}

/// `error`: a frame either side could not process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
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
    CommandResponse(Box<CommandResponse>),
    Notify(Notify),
    EventInterceptResponse(EventInterceptResponse),
    OpenPanel(OpenPanel),
    PanelRender(PanelRender),
    PanelClose(PanelClose),
    ShutdownAck,
    Error(ErrorFrame),
}

/// `hello_ack`: zot's reply to `hello`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelloAck {
    pub protocol_version: u32,
    #[serde(default, deserialize_with = "null_default")]
    pub zot_version: String,
    #[serde(default, deserialize_with = "null_default")]
    pub provider: String,
    #[serde(default, deserialize_with = "null_default")]
    pub model: String,
    #[serde(default, deserialize_with = "null_default")]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
}

/// `command_invoked`: the user ran a registered slash command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInvoked {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub args: String,
}

/// `tool_call`: the model called a registered tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

/// `tool_cancel`: the host gave up on a `tool_call`; the extension should stop working on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCancel {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
}

/// A tool's outcome as observers see it (`event` `tool_result`), without private details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventResult {
    /// Always written, as Go does (`null` for a nil slice).
    #[serde(default, deserialize_with = "null_default")]
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub truncated: bool,
}

/// `event`: a one-way lifecycle notification; which fields are set depends on `event`.
/// `session_id`, `cwd` and `sequence` place it; see the SDK for each event's payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub event: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_run_id: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub queued: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub image_count: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub sequence: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub decision: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<EventResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed: Option<bool>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_estimate: Option<i64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_id: String,
    /// The subagent's name (`subagent_start`, `subagent_stop`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "is_default")]
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
    pub tool_preview: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_args_raw: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// `event_intercept`: like `event`, but the extension may block it (or, for
/// `before_agent_start`, replace `system_prompt`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventIntercept {
    pub id: String,
    pub event: String,
    /// The complete prompt of `before_agent_start`; an empty string is a prompt too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent_run_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args: Option<Value>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub step: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// `panel_key`: the user pressed a key in the extension's panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelKey {
    pub panel_id: String,
    pub key: String,
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
    ToolCancel(ToolCancel),
    Event(Box<Event>),
    EventIntercept(Box<EventIntercept>),
    PanelKey(PanelKey),
    PanelClose(PanelClose),
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
        "open_panel",
        "panel_render",
        "panel_close",
        "shutdown_ack",
        "error",
    ];
}

impl Frame for FromHost {
    const TYPES: &'static [&'static str] = &[
        "hello_ack",
        "command_invoked",
        "tool_call",
        "tool_cancel",
        "event",
        "event_intercept",
        "panel_key",
        "panel_close",
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
    /// A known type whose fields do not fit (missing `name`, wrong types, ...); `field` is
    /// the top-level field at fault when it can be told.
    Invalid {
        kind: String,
        field: Option<String>,
        reason: String,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::NotJson(why) => write!(f, "not JSON ({why})"),
            DecodeError::NoType => f.write_str("not a JSON object with a string \"type\""),
            DecodeError::Invalid {
                kind,
                field: Some(field),
                reason,
            } => write!(f, "{kind}: {field}: {reason}"),
            DecodeError::Invalid { kind, reason, .. } => write!(f, "{kind}: {reason}"),
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
            field: culprit::<F>(&value),
            reason: e.to_string(),
        }),
    }
}

/// The field whose removal makes the frame decode (or merely be missing): the one at fault.
fn culprit<F: Frame>(value: &Value) -> Option<String> {
    let map = value.as_object()?;
    map.keys()
        .filter(|key| *key != "type")
        .find(|key| {
            let mut without = map.clone();
            without.remove(key.as_str());
            match F::deserialize(&Value::Object(without)) {
                Ok(_) => true,
                Err(e) => e.to_string() == format!("missing field `{key}`"),
            }
        })
        .cloned()
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
            FromExt::OpenPanel(_) => "open_panel",
            FromExt::PanelRender(_) => "panel_render",
            FromExt::PanelClose(_) => "panel_close",
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
        r#"{"type":"open_panel","panel":{"id":"p","title":"Pick","lines":["a","b"],"footer":"enter picks"}}"#,
        r#"{"type":"panel_render","panel_id":"p","title":"Pick","lines":["a","> b"],"footer":"f"}"#,
        r#"{"type":"panel_close","panel_id":"p"}"#,
        r#"{"type":"register_tool","name":"later","schema":{"type":"object"},"deferred":true}"#,
        r#"{"type":"register_tool","name":"ask","schema":{"type":"object"},"interactive":true}"#,
        r#"{"type":"tool_result","id":"5","content":[{"type":"text","text":"ok"}],"activate_tools":["later"]}"#,
        r#"{"type":"command_response","id":"6","action":"open_panel","open_panel":{"id":"p","title":"T","lines":["x"]}}"#,
        r#"{"type":"event_intercept_response","id":"7","system_prompt":"be brief"}"#,
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
        r#"{"type":"tool_cancel","id":"5"}"#,
        r#"{"type":"panel_key","panel_id":"p","key":"enter"}"#,
        r#"{"type":"panel_key","panel_id":"p","key":"rune","text":"x"}"#,
        r#"{"type":"panel_close","panel_id":"p"}"#,
        r#"{"type":"event","event":"tool_result","session_id":"s","cwd":"/c","sequence":7,"tool_id":"t1","tool_name":"read","tool_args":{"path":"a"},"status":"ok","executed":true,"result":{"content":[{"type":"text","text":"hi"}],"is_error":false,"truncated":true}}"#,
        r#"{"type":"event","event":"session_end","session_id":"s","sequence":9,"reason":"exit"}"#,
        r#"{"type":"event","event":"user_prompt_submit","text":"hi","queued":true,"image_count":2,"agent_run_id":"r"}"#,
        r#"{"type":"event","event":"tool_confirmation_requested","tool_id":"t","tool_name":"bash","tool_preview":"rm x","tool_args_raw":"{}"}"#,
        r#"{"type":"event","event":"permission_decision","tool_id":"t","decision":"deny","source":"user","stage":"pre","reason":"no"}"#,
        r#"{"type":"event","event":"pre_compact","compaction_id":"c","message_count":0,"token_estimate":1200,"status":"started"}"#,
        r#"{"type":"event","event":"subagent_stop","agent_id":"a","agent_run_id":"r","name":"scout","error":"e"}"#,
        r#"{"type":"event_intercept","id":"8","event":"before_agent_start","system_prompt":"","session_id":"s","agent_run_id":"r","cwd":"/c","provider":"p","model":"m"}"#,
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

    /// Found by the protocol fuzz target: without serde_json's `float_roundtrip`, a number
    /// parsed, written and parsed again came back one unit in the last place off, so `call`
    /// could pass an extension a number other than the one it was given.
    #[test]
    fn numbers_survive_a_round_trip_exactly() {
        let line = r#"{"type":"tool_call","id":"1","name":"t","args":{"x":977777777777370.62}}"#;
        let Ok((_, Decoded::Frame(frame))) = decode::<FromHost>(line) else {
            panic!("{line} does not decode");
        };
        let encoded = encode(&frame);
        let Ok((_, Decoded::Frame(again))) = decode::<FromHost>(encoded.trim_end()) else {
            panic!("{encoded} does not decode");
        };
        assert_eq!(again, frame, "{encoded}");
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
            decode::<FromExt>(r#"{"type":"register_tool","name":"t","schema":{},"exposure":"x"}"#)
                .unwrap();
        assert!(matches!(d, Decoded::Frame(FromExt::RegisterTool(t)) if t.name == "t"));
    }

    #[test]
    fn unknown_types_and_bad_lines() {
        let (_, d) = decode::<FromExt>(r#"{"type":"submit_slash","text":"/x"}"#).unwrap();
        assert_eq!(d, Decoded::Unknown("submit_slash".into()));
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
        assert_eq!(err.to_string(), "register_command: missing field `name`");
    }

    #[test]
    fn kind_matches_the_tag() {
        for example in FROM_EXT {
            let (value, d) = decode::<FromExt>(&example.replace('\n', " ")).unwrap();
            let Decoded::Frame(frame) = d else { panic!() };
            assert_eq!(value["type"], frame.kind());
        }
    }

    fn ext(line: &str) -> FromExt {
        match decode::<FromExt>(line) {
            Ok((_, Decoded::Frame(frame))) => frame,
            other => panic!("{line}: {other:?}"),
        }
    }

    /// Go writes nil slices and nil raw messages as null; they read as empty.
    #[test]
    fn null_reads_as_empty() {
        assert_eq!(
            ext(r#"{"type":"tool_result","id":"1","content":null,"activate_tools":null}"#),
            FromExt::ToolResult(ToolResult {
                id: "1".into(),
                content: Vec::new(),
                is_error: false,
                activate_tools: Vec::new(),
            })
        );
        let FromExt::Hello(hello) =
            ext(r#"{"type":"hello","name":"n","version":null,"capabilities":null}"#)
        else {
            panic!()
        };
        assert!(hello.capabilities.is_empty() && hello.version.is_empty());
        let FromExt::Subscribe(s) = ext(r#"{"type":"subscribe","events":null,"intercept":null}"#)
        else {
            panic!()
        };
        assert!(s.events.is_empty() && s.intercept.is_empty());
        let FromExt::RegisterTool(t) =
            ext(r#"{"type":"register_tool","name":"t","description":null,"schema":null}"#)
        else {
            panic!()
        };
        assert_eq!((t.description.as_str(), t.schema), ("", None));
        let FromExt::CommandResponse(r) = ext(
            r#"{"type":"command_response","id":"1","action":"open_panel","prompt":null,"open_panel":{"id":"p","lines":null}}"#,
        ) else {
            panic!()
        };
        assert_eq!(r.open_panel.unwrap().content.lines, Vec::<String>::new());
        let FromExt::PanelRender(p) = ext(r#"{"type":"panel_render","panel_id":"p","lines":null}"#)
        else {
            panic!()
        };
        assert!(p.content.lines.is_empty());
        let FromExt::ToolResult(r) = ext(
            r#"{"type":"tool_result","id":"1","content":[{"type":"text","text":null,"mime_type":null,"data":null}]}"#,
        ) else {
            panic!()
        };
        assert_eq!(r.content[0].kind, "text");
        let (_, d) = decode::<FromHost>(
            r#"{"type":"event","event":"tool_result","result":{"content":null,"is_error":true}}"#,
        )
        .unwrap();
        let Decoded::Frame(FromHost::Event(event)) = d else {
            panic!()
        };
        assert!(event.result.unwrap().is_error);
        // A required field stays required.
        let err = decode::<FromExt>(r#"{"type":"tool_result","content":null}"#).unwrap_err();
        assert_eq!(err.to_string(), "tool_result: missing field `id`");
    }

    #[test]
    fn the_field_at_fault_is_named() {
        let err = decode::<FromExt>(r#"{"type":"tool_result","id":"1","content":5}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool_result: content: invalid type: integer `5`, expected a sequence"
        );
        let err = decode::<FromExt>(r#"{"type":"register_tool","name":"t","deferred":"yes"}"#)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("register_tool: deferred: invalid type"),
            "{err}"
        );
    }
}
