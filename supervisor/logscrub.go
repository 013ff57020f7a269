package supervisor

import (
	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// ScrubLog wraps a log formatter so that no line it writes carries a
// provider credential of the environment getenv reads, whatever the line
// quotes (an upstream error that echoes the key, a field, a wrapped error).
func ScrubLog(f logrus.Formatter, getenv func(string) string) logrus.Formatter {
	return scrubFormatter{inner: f, scrub: provider.NewScrubber(getenv)}
}

type scrubFormatter struct {
	inner logrus.Formatter
	scrub *provider.Scrubber
}

func (f scrubFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b, err := f.inner.Format(e)
	return f.scrub.Bytes(b), err
}
