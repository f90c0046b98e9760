// Command mcpminimal is the smallest MCP stdio server the official Go SDK
// makes: one tool that does nothing. needlebench experiment mcp-hit-latency
// --cold builds it and spawns it next to needle mcp serve, so that needle's
// time to the initialize answer has a baseline that is all process start
// and protocol, no product.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpminimal", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "noop", Description: "does nothing"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{}, struct{}{}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpminimal:", err)
		os.Exit(1)
	}
}
