"""HTTP adapters: routes, auth and status codes; one module per API family."""
