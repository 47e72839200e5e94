package wireshark

// errOf drops the first result of an rdmap call (Endpoint.Do,
// Endpoint.PostSend), for require.NoError and friends.
func errOf[T any](_ T, err error) error { return err }
