"""Chat templates, reasoning and tool-call formats (the chat layer shared by chat-style APIs)."""
