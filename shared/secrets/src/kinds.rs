//! What a finding is: the closed set of rule kinds and a finding's span. It holds no judgment and
//! must never hold text: a kind is safe to put in a diagnostic.

/// Which rule matched, content-free (safe to put in a diagnostic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A PEM private key, its END line, or its body without armor.
    PrivateKey,
    /// A credential key assigned a value.
    Assignment,
    /// A credential on a command line.
    CommandLine,
    /// An HTTP authorization header or scheme (`Bearer`, `Basic`, API-key headers).
    AuthHeader,
    /// A URL with a password in its userinfo.
    UrlCredentials,
    /// A `.netrc` or `.pgpass` entry.
    CredentialFile,
    /// A password hash (bcrypt, crypt, argon2, Django's, Werkzeug's, LDAP's, an `/etc/shadow`
    /// line's): as good as the password to an offline attack.
    PasswordHash,
    /// A vendor token shape; the name is the provider rule.
    Vendor(&'static str),
    /// A JSON Web Token.
    Jwt,
    /// A random-looking value right after a secret word in prose.
    Prose,
}

impl SecretKind {
    /// The rule name in snake_case, for diagnostics and redaction markers.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrivateKey => "private_key",
            Self::Assignment => "assignment",
            Self::CommandLine => "command_line",
            Self::AuthHeader => "auth_header",
            Self::UrlCredentials => "url_credentials",
            Self::CredentialFile => "credential_file",
            Self::PasswordHash => "password_hash",
            Self::Vendor(name) => name,
            Self::Jwt => "jwt",
            Self::Prose => "prose",
        }
    }

    /// Declaration order doubles as priority when several rules match.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Self::PrivateKey => 0,
            Self::Assignment => 1,
            Self::CommandLine => 2,
            Self::AuthHeader => 3,
            Self::UrlCredentials => 4,
            Self::CredentialFile => 5,
            Self::PasswordHash => 6,
            Self::Vendor(_) => 7,
            Self::Jwt => 8,
            Self::Prose => 9,
        }
    }
}

/// One detected secret: the rule and the byte span of the secret value (not of its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// The rule.
    pub kind: SecretKind,
    /// First byte of the secret.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}
