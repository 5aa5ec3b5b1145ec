"""The conformance tests: each checks one feature of one API family against the target."""
