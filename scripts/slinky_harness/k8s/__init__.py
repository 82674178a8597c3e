"""A real Kubernetes control plane and what runs against it: fleets, schemas, manifests, accounts, Slinky components."""
