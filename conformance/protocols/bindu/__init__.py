"""The Bindu profile: its requirements, each declared on its check with its faults, by part
of the protocol (``modules``, in the order they run), the variants the spec allows, the
reference agent and the task state model."""
