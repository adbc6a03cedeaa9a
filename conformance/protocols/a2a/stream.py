"""Streaming (SendStreamingMessage, SubscribeToTask): part 2."""
