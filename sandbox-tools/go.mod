module agent-sandbox-tools

go 1.21
