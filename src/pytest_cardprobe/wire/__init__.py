"""Wire stage: talk to model servers, record and replay their raw replies."""
