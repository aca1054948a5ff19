"""A workflow with a definition error, to show what ``procflow check`` reports (docs/cli.md).

procflow check examples/bad.py:guards
"""

from procflow.processors import RegexFilterProcessor
from procflow.workflows import ProcessorStepSchema, create_workflow

redact = RegexFilterProcessor(presets=["pii"], strategy="redact", id="redact-pii")
no_secrets = RegexFilterProcessor(presets=["secrets"], strategy="block", id="no-secrets")

guards = (  # the two branches each edit their own copy of the messages, and nothing picks one
    create_workflow(id="guards", input_schema=ProcessorStepSchema, output_schema=ProcessorStepSchema)
    .parallel([redact, no_secrets])
    .commit()
)
