"""The chat format shared by the ``procflow`` command and the gateway: OpenAI-style conversations as JSON,
parsed into messages and back, the JSON limits procflow accepts, and the redaction rules behind a
violation's counts. Below both ``procflow._cli`` and ``procflow.server``; imports neither."""
