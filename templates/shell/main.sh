#!/bin/sh
# __NAME__: a zot extension in POSIX sh.
# Registers the /__COMMAND__ slash command and the __TOOL__ tool. It speaks
# newline-delimited JSON on stdin/stdout; messages for people go to stderr, which
# zot keeps in $ZOT_HOME/logs/ext-__NAME__.log.
#
# Limitation: sh cannot parse JSON. A frame is recognised by how zot writes it,
# compact JSON starting with {"type":"...", and its "id" is cut out with
# parameter expansion. Arguments are not read: the command and the tool always
# answer with the same text. For real argument handling, use jq or another
# language (zot ext new --lang python).

NAME='__NAME__'

send() {
  printf '%s\n' "$1"
}

log() {
  printf '%s: %s\n' "$NAME" "$1" >&2
}

# The first "id" of a frame; zot's ids are plain strings without quotes.
id_of() {
  rest=${1#*\"id\":\"}
  printf '%s' "${rest%%\"*}"
}

send '{"type":"hello","name":"'"$NAME"'","version":"0.1.0","capabilities":["commands","tools"]}'

while IFS= read -r line || [ -n "$line" ]; do
  case $line in
    '{"type":"hello_ack"'*)
      send '{"type":"register_command","name":"__COMMAND__","description":"say hello from __NAME__"}'
      send '{"type":"register_tool","name":"__TOOL__","description":"Answer with a greeting (an example tool; it ignores its arguments).","schema":{"type":"object","properties":{}}}'
      send '{"type":"ready"}'
      ;;
    '{"type":"command_invoked"'*)
      send '{"type":"command_response","id":"'"$(id_of "$line")"'","action":"display","display":"hello from __NAME__"}'
      ;;
    '{"type":"tool_call"'*)
      send '{"type":"tool_result","id":"'"$(id_of "$line")"'","content":[{"type":"text","text":"hello from __NAME__"}]}'
      ;;
    '{"type":"shutdown"'*)
      send '{"type":"shutdown_ack"}'
      exit 0
      ;;
    '{'*)
      # Events and frames of newer zot versions are ignored.
      ;;
    *)
      log "ignoring a line that is not a JSON frame"
      ;;
  esac
done
