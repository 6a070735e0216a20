package nfsclient

// SetAfterMapHook runs f once each ReadFromAt source is mapped (tests of
// the external package; not part of the API).
func SetAfterMapHook(f func()) { afterMap = f }
