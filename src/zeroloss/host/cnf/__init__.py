"""The CNF as Kubernetes manifests: the testpmd Pod, its NetworkAttachmentDefinitions, the SR-IOV operator's
SriovNetworkNodePolicy and the PerformanceProfile, each checked against its API schema."""
