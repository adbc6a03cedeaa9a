"""Extensions (A2A-Extensions): part 2."""
