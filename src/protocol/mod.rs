//! The extension wire protocol (version 1): every frame an extension sends and those zot ext
//! sends it (the host's lifecycle events and panel keys are not: nothing here sends them) as
//! serde types, and the newline-delimited codec. Unknown fields are ignored; unknown frame
//! types decode to [`Decoded::Unknown`] so newer peers do not break older readers. Go's
//! encoder writes a nil slice (or a nil `json.RawMessage`) as `null`, so list and string
//! fields also read `null` as empty.
//! The frame structs are declared with `frame!`, which gives each field one of a few wire
//! rules.
//! What the host itself does, version by version, is in [`zot`].

pub(crate) mod zot;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol version sent in `hello_ack`.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// The longest line zot's reader accepts (its `bufio.Scanner` buffer); a longer line ends
/// the conversation.
pub(crate) const MAX_LINE: usize = 4 * 1024 * 1024;

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

/// Declares a frame struct (deriving `Debug`, `Clone`, `PartialEq`, `Serialize` and
/// `Deserialize`) whose fields each start with the rule by which they travel. Fields are
/// written in the order declared.
///
/// | rule        | when absent      | `null` reads as | written              |
/// |-------------|------------------|-----------------|----------------------|
/// | `required`  | decoding fails   | empty           | always               |
/// | `always`    | empty            | empty           | always               |
/// | `omitempty` | empty            | empty           | unless empty         |
/// | `optional`  | empty            | an error        | unless empty         |
///
/// ("empty" is the type's `Default`; `null` always reads as `None` for an `Option`.) A
/// field without a rule is a plain serde field and takes `#[serde(...)]` attributes
/// (`flatten`, or a field of a host frame that is required and may not be `null`).
macro_rules! frame {
    ($(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        frame!(@field [$(#[$meta])* pub struct $name] [] $($fields)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* required $field:ident: $ty:ty, $($rest:tt)*) => {
        frame!(@field $head [$($done)* $(#[$attr])*
            #[serde(deserialize_with = "null_default")] pub $field: $ty,] $($rest)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* always $field:ident: $ty:ty, $($rest:tt)*) => {
        frame!(@field $head [$($done)* $(#[$attr])*
            #[serde(default, deserialize_with = "null_default")] pub $field: $ty,] $($rest)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* omitempty $field:ident: $ty:ty, $($rest:tt)*) => {
        frame!(@field $head [$($done)* $(#[$attr])*
            #[serde(default, deserialize_with = "null_default", skip_serializing_if = "is_default")]
            pub $field: $ty,] $($rest)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* optional $field:ident: $ty:ty, $($rest:tt)*) => {
        frame!(@field $head [$($done)* $(#[$attr])*
            #[serde(default, skip_serializing_if = "is_default")] pub $field: $ty,] $($rest)*);
    };
    (@field $head:tt [$($done:tt)*]
        $(#[$attr:meta])* $field:ident: $ty:ty, $($rest:tt)*) => {
        frame!(@field $head [$($done)* $(#[$attr])* pub $field: $ty,] $($rest)*);
    };
    (@field [$(#[$meta:meta])* pub struct $name:ident] [$($done:tt)*]) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct $name { $($done)* }
    };
}

/// Declares a string-valued enum of the protocol: the known values as variants, anything
/// else kept as `Unknown` so that it is passed on (and printed) unchanged. An absent or
/// `null` value reads as `Unknown("")`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($variant,)*
            /// A value this version does not know, as sent.
            Unknown(String),
        }

        impl $name {
            /// The value as it travels.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Unknown(text) => text,
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::Unknown(String::new())
            }
        }

        impl From<String> for $name {
            fn from(text: String) -> Self {
                match text.as_str() {
                    $($text => $name::$variant,)*
                    _ => $name::Unknown(text),
                }
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                match value {
                    $name::Unknown(text) => text,
                    known => known.as_str().to_string(),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

frame! {
    /// `hello`: the first frame an extension sends.
    pub struct Hello {
        required name: String,
        always version: String,
        omitempty capabilities: Vec<String>,
    }
}

frame! {
    /// `register_command`: binds `/name` to the extension.
    pub struct RegisterCommand {
        required name: String,
        omitempty description: String,
    }
}

frame! {
    /// `register_tool`: exposes a tool to the model; `schema` should be a JSON Schema object.
    /// A `deferred` tool stays hidden until a tool result names it in `activate_tools`; an
    /// `interactive` one waits for the user, so headless hosts refuse to call it.
    pub struct RegisterTool {
        required name: String,
        omitempty description: String,
        always schema: Option<Value>,
        optional deferred: bool,
        optional interactive: bool,
    }
}

frame! {
    /// `subscribe`: lifecycle events to observe and to intercept.
    pub struct Subscribe {
        omitempty events: Vec<String>,
        omitempty intercept: Vec<String>,
    }
}

wire_enum! {
    /// What a [`ContentBlock`] holds.
    pub enum ContentKind {
        Text = "text",
        Image = "image",
    }
}

frame! {
    /// One block of a tool result: `text`, or `image` with base64 `data`.
    pub struct ContentBlock {
        #[serde(rename = "type")]
        required kind: ContentKind,
        omitempty text: String,
        omitempty mime_type: String,
        omitempty data: String,
    }
}

frame! {
    /// `tool_result`: the reply to a `tool_call`; `activate_tools` reveals deferred tools.
    pub struct ToolResult {
        required id: String,
        /// Always written, as Go does (`null` for a nil slice).
        always content: Vec<ContentBlock>,
        optional is_error: bool,
        omitempty activate_tools: Vec<String>,
    }
}

frame! {
    /// What a panel shows: a title, lines of text and a footer.
    #[derive(Default)]
    pub struct PanelContent {
        omitempty title: String,
        omitempty lines: Vec<String>,
        omitempty footer: String,
    }
}

frame! {
    /// A panel an extension shows inside zot.
    #[derive(Default)]
    pub struct PanelSpec {
        always id: String,
        #[serde(flatten)]
        content: PanelContent,
    }
}

wire_enum! {
    /// What zot does with a [`CommandResponse`].
    pub enum Action {
        Prompt = "prompt",
        Insert = "insert",
        Display = "display",
        Noop = "noop",
        OpenPanel = "open_panel",
    }
}

frame! {
    /// `command_response`: the reply to `command_invoked`; action `open_panel` carries the
    /// panel.
    pub struct CommandResponse {
        required id: String,
        always action: Action,
        omitempty prompt: String,
        omitempty insert: String,
        omitempty display: String,
        optional open_panel: Option<PanelSpec>,
        omitempty error: String,
    }
}

frame! {
    /// `open_panel`: a panel opened at any time, not in answer to a command.
    pub struct OpenPanel {
        always panel: PanelSpec,
    }
}

frame! {
    /// `panel_render`: a new frame for an open panel.
    pub struct PanelRender {
        always panel_id: String,
        #[serde(flatten)]
        content: PanelContent,
    }
}

frame! {
    /// `panel_close` (either direction): the panel is gone.
    pub struct PanelClose {
        always panel_id: String,
    }
}

frame! {
    /// `notify`: a one-way status note.
    pub struct Notify {
        always level: String,
        always message: String,
    }
}

frame! {
    /// `event_intercept_response`: the reply to `event_intercept`. `system_prompt` (a JSON
    /// string) replaces the prompt of a `before_agent_start`.
    pub struct EventInterceptResponse {
        required id: String,
        optional block: bool,
        omitempty reason: String,
        optional modified_args: Option<Value>,
        omitempty replace_text: String,
        optional system_prompt: Option<Value>,
    }
}

frame! {
    /// `error`: a frame either side could not process.
    pub struct ErrorFrame {
        optional id: Option<String>,
        always message: String,
    }
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
    /// A type this version does not know; never written.
    #[serde(other, skip_serializing)]
    Unknown,
}

frame! {
    /// `hello_ack`: zot's reply to `hello`.
    pub struct HelloAck {
        protocol_version: u32,
        always zot_version: String,
        always provider: String,
        always model: String,
        always cwd: String,
        optional extension_dir: Option<String>,
        optional data_dir: Option<String>,
    }
}

frame! {
    /// `command_invoked`: the user ran a registered slash command.
    pub struct CommandInvoked {
        required id: String,
        required name: String,
        omitempty args: String,
    }
}

frame! {
    /// `tool_call`: the model called a registered tool.
    pub struct ToolCall {
        required id: String,
        required name: String,
        always args: Value,
    }
}

frame! {
    /// `tool_cancel`: the host gave up on a `tool_call`; the extension should stop working
    /// on it.
    pub struct ToolCancel {
        required id: String,
    }
}

/// Every frame zot sends to an extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromHost {
    HelloAck(HelloAck),
    CommandInvoked(CommandInvoked),
    ToolCall(ToolCall),
    ToolCancel(ToolCancel),
    Shutdown,
    /// A type this version does not send; never written.
    #[serde(other, skip_serializing)]
    Unknown,
}

/// A frame family: the types it knows decode to themselves, any other to its `Unknown`.
pub trait Frame: Serialize + DeserializeOwned {
    /// Whether this is the family's `Unknown` (a `type` it does not define).
    fn is_unknown(&self) -> bool;
}

impl Frame for FromExt {
    fn is_unknown(&self) -> bool {
        matches!(self, FromExt::Unknown)
    }
}

impl Frame for FromHost {
    fn is_unknown(&self) -> bool {
        matches!(self, FromHost::Unknown)
    }
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
    match F::deserialize(&value) {
        Ok(frame) if frame.is_unknown() => {
            let kind = kind.to_string();
            Ok((value, Decoded::Unknown(kind)))
        }
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

    /// Every host → extension example in extensions.md that zot ext sends, plus `shutdown`.
    const FROM_HOST: &[&str] = &[
        r#"{"type":"hello_ack","protocol_version":1,
 "zot_version":"0.0.7","provider":"anthropic",
 "model":"claude-opus-4-7","cwd":"/Users/pat/Developer/zot"}"#,
        r#"{"type":"command_invoked","id":"...",
 "name":"weather","args":"berlin"}"#,
        r#"{"type":"tool_call","id":"...","name":"weather",
 "args":{"city":"Berlin"}}"#,
        r#"{"type":"shutdown"}"#,
        r#"{"type":"hello_ack","protocol_version":1,"zot_version":"1","provider":"p","model":"m","cwd":"/c","extension_dir":"/e","data_dir":"/e"}"#,
        r#"{"type":"tool_cancel","id":"5"}"#,
    ];

    /// The host → extension examples of extensions.md that zot ext never sends (lifecycle
    /// events, intercepts, panel keys): kept so the spec's examples are all accounted for.
    const NOT_SENT: &[&str] = &[
        r#"{"type":"event","event":"turn_start","step":1}"#,
        r#"{"type":"event","event":"tool_call",
 "tool_id":"...","tool_name":"read","tool_args":{"path":"foo.go"}}"#,
        r#"{"type":"event","event":"turn_end","stop":"end_turn"}"#,
        r#"{"type":"event_intercept","id":"...","event":"tool_call",
 "tool_id":"...","tool_name":"bash",
 "tool_args":{"command":"rm -rf /tmp/foo"}}"#,
        r#"{"type":"error","message":"unknown frame"}"#,
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
        assert!(line.strip_suffix('\n').is_some_and(|l| !l.contains('\n')));
        let again: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(again, original, "{frame:?}");
    }

    #[test]
    fn every_documented_frame_round_trips() {
        for e in FROM_EXT {
            round_trips::<FromExt>(e);
        }
        for e in FROM_HOST {
            round_trips::<FromHost>(e);
        }
    }

    /// Found by the protocol fuzz target: without `serde_json`'s `float_roundtrip`, a number
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
            .chain(NOT_SENT)
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
        let (_, d) = decode::<FromHost>(r#"{"type":"event","event":"turn_start"}"#).unwrap();
        assert_eq!(d, Decoded::Unknown("event".into()));
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
        let FromExt::Subscribe(subscribe) =
            ext(r#"{"type":"subscribe","events":null,"intercept":null}"#)
        else {
            panic!()
        };
        assert!(subscribe.events.is_empty() && subscribe.intercept.is_empty());
        let FromExt::RegisterTool(tool) =
            ext(r#"{"type":"register_tool","name":"t","description":null,"schema":null}"#)
        else {
            panic!()
        };
        assert_eq!((tool.description.as_str(), tool.schema), ("", None));
        let FromExt::CommandResponse(response) = ext(
            r#"{"type":"command_response","id":"1","action":"open_panel","prompt":null,"open_panel":{"id":"p","lines":null}}"#,
        ) else {
            panic!()
        };
        assert_eq!(
            response.open_panel.unwrap().content.lines,
            Vec::<String>::new()
        );
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
        assert_eq!(r.content[0].kind, ContentKind::Text);
        // A required field stays required.
        let err = decode::<FromExt>(r#"{"type":"tool_result","content":null}"#).unwrap_err();
        assert_eq!(err.to_string(), "tool_result: missing field `id`");
    }

    /// Block kinds and actions this version does not know are kept as sent, so they are
    /// passed on and shown unchanged.
    #[test]
    fn unknown_kinds_and_actions_survive() {
        let line = r#"{"type":"tool_result","id":"1","content":[{"type":"audio","data":"x"},{"type":"image"}]}"#;
        let FromExt::ToolResult(r) = ext(line) else {
            panic!()
        };
        assert_eq!(r.content[0].kind, ContentKind::Unknown("audio".into()));
        assert_eq!(r.content[1].kind, ContentKind::Image);
        assert_eq!(encode(&FromExt::ToolResult(r)), format!("{line}\n"));
        let line = r#"{"type":"command_response","id":"1","action":"later"}"#;
        let FromExt::CommandResponse(r) = ext(line) else {
            panic!()
        };
        assert_eq!(r.action, Action::Unknown("later".into()));
        assert_eq!(r.action.to_string(), "later");
        let FromExt::CommandResponse(r) =
            ext(r#"{"type":"command_response","id":"1","action":null}"#)
        else {
            panic!()
        };
        assert_eq!(r.action, Action::Unknown(String::new()));
        assert_eq!(
            ext(r#"{"type":"command_response","id":"1","action":"open_panel"}"#),
            FromExt::CommandResponse(Box::new(CommandResponse {
                id: "1".into(),
                action: Action::OpenPanel,
                prompt: String::new(),
                insert: String::new(),
                display: String::new(),
                open_panel: None,
                error: String::new(),
            }))
        );
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
