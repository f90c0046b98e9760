package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/needle-dev/needle/product/internal/jsonrpc"
)

// MCP protocol versions this server speaks, newest first. A client asking
// for another one is answered with the newest (the spec's negotiation).
var mcpVersions = []string{"2025-06-18", "2024-11-05"}

// MCPConfig configures one MCP stdio connection.
type MCPConfig struct {
	Engine      *Engine
	Repository  string
	MainModel   string
	Profile     ProfileRevision
	CacheOnly   bool
	WorkerReady bool // a worker backend is configured
	Log         io.Writer
}

// mcpSession is the state of one connection: frozen at initialize.
type mcpSession struct {
	id      string
	log     io.Writer
	opening *mcpOpening
	// cfg is the opened configuration the session froze: written once,
	// before frozen closes, and read only after it (ready).
	cfg       MCPConfig
	freezeErr error
	frozen    chan struct{}
	freezing  sync.Once
	ctx       context.Context // the connection's: the freeze outlives initialize's request
	wg        sync.WaitGroup  // the freeze
	mu        sync.Mutex
	version   string // negotiated protocol version, "" before initialize
	compiled  compiledArgs
}

// mcpOpening is what a connection serves, opened while the connection
// starts: initialize is answered without waiting for the store, and the
// requests that need it wait (mcpSession.ready).
type mcpOpening struct {
	done chan struct{}
	cfg  MCPConfig // set before done closes
	err  error
}

// openMCP runs open in the background; its result is the configuration
// with its Engine, or why there is none.
func openMCP(open func() (MCPConfig, error)) *mcpOpening {
	o := &mcpOpening{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.cfg, o.err = open()
	}()
	return o
}

// wait returns the opening's result once it is known, or ctx's error.
func (o *mcpOpening) wait(ctx context.Context) (MCPConfig, error) {
	select {
	case <-o.done:
		return o.cfg, o.err
	case <-ctx.Done():
		return MCPConfig{}, ctx.Err()
	}
}

// ServeMCP serves the MCP stdio protocol on in/out until in closes. The
// transport (product/internal/jsonrpc) enforces bounded lines, initialize
// first, unique request ids, FIFO resolution and cancellation; this file
// maps MCP methods onto the engine.
func ServeMCP(ctx context.Context, cfg MCPConfig, in io.Reader, out io.Writer) error {
	return serveMCP(ctx, cfg.Log, openMCP(func() (MCPConfig, error) { return cfg, nil }), in, out)
}

// serveMCP is ServeMCP over an engine still opening (needle mcp serve):
// log gets the diagnostics meanwhile. It returns once the session is
// frozen, or failed to be, so the caller may close the engine.
func serveMCP(ctx context.Context, log io.Writer, opening *mcpOpening, in io.Reader, out io.Writer) error {
	s := &mcpSession{id: newSessionID("mcp"), log: log, opening: opening, frozen: make(chan struct{}), ctx: ctx}
	srv := jsonrpc.NewServer(map[string]jsonrpc.Method{
		"initialize": {Handle: s.initialize, BeforeInit: true},
		"ping":       {Handle: func(context.Context, jsonrpc.Request) (any, error) { return struct{}{}, nil }, BeforeInit: true},
		"tools/list": {Handle: s.toolsList},
		"tools/call": {Handle: s.toolsCall, Serialized: true},
		// The client's acknowledgement of initialize: nothing to do.
		"notifications/initialized": {Handle: func(context.Context, jsonrpc.Request) (any, error) { return nil, nil },
			BeforeInit: true, Notification: true},
	}, jsonrpc.Options{Log: log, CancelMethod: "notifications/cancelled", InitMethod: "initialize", DrainOnEOF: true,
		MaxInFlight: maxMCPInFlight})
	err := srv.Serve(ctx, in, out)
	s.wg.Wait()
	return err
}

// maxMCPInFlight bounds an MCP session's requests in flight (running,
// queued behind the one tool call that runs, or writing their answer):
// one more is answered -32001 "server overloaded", and a client that
// never reads its answers stops being read (product/internal/jsonrpc).
const maxMCPInFlight = jsonrpc.DefaultMaxInFlight

type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
	ClientInfo      struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"clientInfo"`
}

// decodeInitializeParams decodes initialize's params by the envelope's
// rule (jsonrpc.DecodeParams: exact member names, none twice): a gateway
// that reads protocolVersion sees the version Needle negotiates.
func decodeInitializeParams(raw json.RawMessage) (initializeParams, error) {
	var p initializeParams
	if err := jsonrpc.DecodeParams(raw, &p); err != nil {
		return p, err
	}
	if p.ProtocolVersion == "" {
		return p, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: params.protocolVersion is required"}
	}
	return p, nil
}

// initialize negotiates the protocol version and freezes the session:
// repository, profile revision, enabled routes, semantic definition, main
// model and worker policy, recorded in the session row. The answer does
// not wait for the store: the session is frozen as soon as the engine is
// open, and every request that needs the engine waits for that (ready).
func (s *mcpSession) initialize(ctx context.Context, req jsonrpc.Request) (any, error) {
	p, err := decodeInitializeParams(req.Params)
	if err != nil {
		return nil, err
	}
	version := mcpVersions[0]
	if slices.Contains(mcpVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.mu.Lock()
	s.version = version
	s.mu.Unlock()
	s.freezing.Do(func() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(s.frozen)
			s.cfg, s.freezeErr = s.freeze(version)
		}()
	})
	res := initializeResult{ProtocolVersion: version, Instructions: mcpInstructions,
		ServerInfo: serverInfo{Name: "needle", Title: "Needle", Version: Version()}}
	return res, nil
}

// freeze waits for the engine and records the session and what it froze.
func (s *mcpSession) freeze(version string) (MCPConfig, error) {
	cfg, err := s.opening.wait(s.ctx)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Engine.FreezeSession(s.ctx, s.id, sessionFreeze{Profile: cfg.Profile, CacheOnly: cfg.CacheOnly,
		Worker: cfg.WorkerReady && !cfg.CacheOnly, Protocol: version})
}

// ready waits until the session is frozen; after it returns nil, s.cfg
// holds the opened engine. An engine that could not be opened, or a
// session that could not be recorded, fails every request that needs it
// with that error.
func (s *mcpSession) ready(ctx context.Context) error {
	select {
	case <-s.frozen:
		return s.freezeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *mcpSession) protocol() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// modern reports whether the session speaks 2025-06-18 (structured output).
func (s *mcpSession) modern() bool { return s.protocol() == "2025-06-18" }

// toolsList lists the tools the session can run (mcpTools, each offered
// when its available predicate holds): need_context always; verify_change
// with a worker backend (an App Server configured, not --cache-only); and
// prepare_change when also the frozen role profile lets patch workers
// write. Every tool carries its annotations; the outputSchemas are offered
// on 2025-06-18 only.
func (s *mcpSession) toolsList(ctx context.Context, _ jsonrpc.Request) (any, error) {
	if err := s.ready(ctx); err != nil {
		return nil, s.notReady(ctx, "tools/list", err)
	}
	res := toolsListResult{Tools: []toolInfo{}}
	for _, t := range mcpTools {
		if !t.available(s) {
			continue
		}
		ann := t.annotations
		info := toolInfo{Name: t.name, Title: t.title, Description: t.description, InputSchema: t.input(s.cfg.Engine),
			Annotations: &ann}
		if s.modern() {
			info.OutputSchema = t.output()
		}
		res.Tools = append(res.Tools, info)
	}
	return res, nil
}

// workers reports whether the session may run change workers: the engine
// has an App Server and the server does not run --cache-only.
func (s *mcpSession) workers() bool { return s.cfg.Engine.codex != nil && !s.cfg.CacheOnly }

type toolCallParams struct {
	Name      string         `json:"name"`
	Arguments jsontext.Value `json:"arguments"`
}

// decodeToolCallParams decodes tools/call's params by the envelope's rule
// (jsonrpc.DecodeParams): exactly "name" and "arguments", none twice, so
// the tool a gateway reads is the tool Needle runs. The arguments are the
// tool's to decode (strictly, with their own paths); absent arguments are
// an empty object.
func decodeToolCallParams(raw json.RawMessage) (toolCallParams, error) {
	var p toolCallParams
	if err := jsonrpc.DecodeParams(raw, &p, "arguments"); err != nil {
		return p, err
	}
	if len(p.Arguments) == 0 {
		p.Arguments = jsontext.Value("{}")
	}
	return p, nil
}

// toolsCall runs a tool. A tool the session does not list is unknown.
// Invalid arguments are a JSON-RPC -32602 before anything is resolved; a
// failure while resolving is a tool result with isError and a typed body.
func (s *mcpSession) toolsCall(ctx context.Context, req jsonrpc.Request) (any, error) {
	p, err := decodeToolCallParams(req.Params)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(mcpTools, func(t mcpTool) bool { return t.name == p.Name })
	if i >= 0 {
		if err := s.ready(ctx); err != nil {
			return s.callFailed(ctx, p.Name, err)
		}
	}
	if i < 0 || !mcpTools[i].available(s) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
	}
	return mcpTools[i].call(ctx, s, []byte(p.Arguments))
}

// callFailed maps a tool's error: invalid input and unknown names are
// -32602, a cancelled call -32800; a conflict or a missing worker is a tool
// result with isError and its message; anything else is an "internal error"
// result whose details go to the log only.
func (s *mcpSession) callFailed(ctx context.Context, tool string, err error) (any, error) {
	info := KindOf(err).info()
	switch {
	case info.rpc != 0:
		return nil, rpcError(info.rpc, err)
	case ctx.Err() != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeRequestCancelled, Message: "request cancelled"}
	case info.public:
		return s.toolError(tool + ": " + err.Error()), nil
	}
	if s.log != nil {
		fmt.Fprintf(s.log, "%s: %v\n", tool, err)
	}
	return s.toolError("internal error"), nil
}

// notReady is the JSON-RPC error of a request other than a tool call that
// needs an engine which could not be opened (or a session not recorded):
// the error's own code and message where its kind is public, else an
// internal error whose details go to the log.
func (s *mcpSession) notReady(ctx context.Context, method string, err error) error {
	info := KindOf(err).info()
	switch {
	case ctx.Err() != nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeRequestCancelled, Message: "request cancelled"}
	case info.public:
		code := info.rpc
		if code == 0 {
			code = jsonrpc.CodeInternal
		}
		return &jsonrpc.Error{Code: code, Message: method + ": " + err.Error()}
	}
	if s.log != nil {
		fmt.Fprintf(s.log, "%s: %v\n", method, err)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternal, Message: "internal error"}
}

// invalidParams is the -32602 answer to arguments that do not decode or
// compile.
func invalidParams(err error) error { return rpcError(jsonrpc.CodeInvalidParams, err) }

// rpcError is a JSON-RPC error answering err, its message naming the
// error's kind and JSON path.
func rpcError(code int, err error) error {
	var e *Error
	msg := err.Error()
	if errors.As(err, &e) && e.Err != nil {
		msg = e.Kind.String() + ": " + e.Path + ": " + e.Err.Error()
	}
	return &jsonrpc.Error{Code: code, Message: msg}
}

// toolResult is the MCP result: the context as text content and, on
// 2025-06-18, the structured result r whose context is text;
// content[0].text == structuredContent.context.
func (s *mcpSession) toolResult(text string, r any) callResult {
	out := callResult{
		Meta:    callMeta{Session: s.id, Definition: DefinitionID(), Protocol: s.protocol()},
		Content: []textContent{{Type: "text", Text: text}},
	}
	if s.modern() {
		out.StructuredContent = r
	}
	return out
}

func (s *mcpSession) toolError(msg string) callResult {
	return callResult{Meta: callMeta{Session: s.id}, Content: []textContent{{Type: "text", Text: msg}}, IsError: true}
}

// The typed MCP results. Their fields are in the order of their JSON names,
// so they encode exactly as the generic maps they replaced.

// initializeResult is the result of initialize.
type initializeResult struct {
	Capabilities    capabilities `json:"capabilities"`
	Instructions    string       `json:"instructions"`
	ProtocolVersion string       `json:"protocolVersion"`
	ServerInfo      serverInfo   `json:"serverInfo"`
}

type capabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

// mcpInstructions tells the main model what the server is for.
const mcpInstructions = "Ask need_context for typed evidence (where something is implemented, how a flag flows, " +
	"which tests cover it). Its context cites path:start-end locations that Needle proved fresh for the current source; " +
	"a bypass means do the work yourself."

// toolsListResult is the result of tools/list.
type toolsListResult struct {
	Tools []toolInfo `json:"tools"`
}

// toolInfo is one tool as tools/list describes it.
type toolInfo struct {
	Annotations  *toolAnnotations `json:"annotations,omitempty"`
	Description  string           `json:"description"`
	InputSchema  any              `json:"inputSchema"`
	Name         string           `json:"name"`
	OutputSchema any              `json:"outputSchema,omitempty"`
	Title        string           `json:"title"`
}

// toolAnnotations are MCP's hints about what a tool does to its
// environment (the user's work tree and the world beyond it). Hosts decide
// approvals by them: Codex asks for none when a tool is read-only, or is
// neither destructive nor open-world. Every hint is stated, since a
// missing one counts as its most dangerous value.
type toolAnnotations struct {
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
	ReadOnlyHint    bool `json:"readOnlyHint"`
}

// callResult is the result of tools/call.
type callResult struct {
	Meta              callMeta      `json:"_meta"`
	Content           []textContent `json:"content"`
	IsError           bool          `json:"isError"`
	StructuredContent any           `json:"structuredContent,omitempty"`
}

// callMeta names the session, and for a result the semantic definition and
// protocol it was answered under.
type callMeta struct {
	Definition string `json:"needle/definition,omitempty"`
	Protocol   string `json:"needle/protocol,omitempty"`
	Session    string `json:"needle/session"`
}

type textContent struct {
	Text string `json:"text"`
	Type string `json:"type"`
}
