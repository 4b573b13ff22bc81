"""Suite stage: YAML case files become plain, frozen data; probes and requests come from them."""
