package rdmap

// ddpULP is the endpoint as its DDP receiver sees it: the ddp.ULP methods
// (TaggedTarget, CheckUntagged, Deliver, Failed, Closed; rx.go) are
// defined on this type rather than on Endpoint, so that they are not part
// of the verbs API a user calls. Only NewEndpoint hands it out, to
// ddp.NewReceiver.
type ddpULP Endpoint
