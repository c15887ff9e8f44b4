// __NAME__: a zot extension in Go (standard library only).
//
// Registers the /__COMMAND__ slash command and the __TOOL__ tool. It speaks
// newline-delimited JSON on stdin/stdout; messages for people go to stderr, which
// zot keeps in $ZOT_HOME/logs/ext-__NAME__.log.
//
// Build it with: go build -o __BINARY__ .
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

const (
	name    = "__NAME__"
	version = "0.1.0"
)

// frame holds the fields of the host frames this extension reads. Args is a
// string for command_invoked and a JSON object for tool_call.
type frame struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Args json.RawMessage `json:"args"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var out = json.NewEncoder(os.Stdout)

// send writes one frame as one line; os.Stdout is unbuffered.
func send(v map[string]any) {
	if err := out.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot write to zot: %v\n", name, err)
		os.Exit(1)
	}
}

// register announces the command and the tool once zot has answered hello, then ready.
func register() {
	send(map[string]any{"type": "register_command", "name": "__COMMAND__", "description": "say hello from " + name})
	send(map[string]any{
		"type":        "register_tool",
		"name":        "__TOOL__",
		"description": "Echo a text back (an example tool).",
		"schema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text": map[string]any{"type": "string", "description": "the text to echo"},
			},
			"required": []string{"text"},
		},
	})
	send(map[string]any{"type": "ready"})
}

// onCommand handles /__COMMAND__ [args]: a note in the chat, without a model call.
func onCommand(f frame) {
	var args string
	_ = json.Unmarshal(f.Args, &args)
	text := "hello from " + name
	if args = strings.TrimSpace(args); args != "" {
		text += ", you said: " + args
	}
	send(map[string]any{"type": "command_response", "id": f.ID, "action": "display", "display": text})
}

// onTool handles the __TOOL__ tool: it answers with the "text" argument.
func onTool(f frame) {
	var args struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(f.Args, &args); err != nil || args.Text == nil {
		send(map[string]any{"type": "tool_result", "id": f.ID, "is_error": true,
			"content": []block{{Type: "text", Text: `"text" must be a string`}}})
		return
	}
	send(map[string]any{"type": "tool_result", "id": f.ID,
		"content": []block{{Type: "text", Text: *args.Text}}})
}

func main() {
	send(map[string]any{"type": "hello", "name": name, "version": version,
		"capabilities": []string{"commands", "tools"}})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		var f frame
		if err := json.Unmarshal(in.Bytes(), &f); err != nil {
			fmt.Fprintf(os.Stderr, "%s: ignoring a line that is not JSON: %v\n", name, err)
			continue
		}
		switch f.Type {
		case "hello_ack":
			register()
		case "command_invoked":
			onCommand(f)
		case "tool_call":
			onTool(f)
		case "shutdown":
			send(map[string]any{"type": "shutdown_ack"})
			return
		}
		// Anything else (events, frames of newer zot versions) is ignored.
	}
}
