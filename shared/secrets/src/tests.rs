//! The filter's unit tests through its whole pass: each judgment both ways, on texts written for it
//! (the rates per corpus source are in `tests/rates.rs`). Test code only; nothing here ships.

use super::{find_secret, findings, is_secret_like, redact, strip_private};
use crate::kinds::SecretKind;
use crate::words::words_of;
use crate::words::{NO_WORDS, POSITION_QUALIFIERS, PREFIX_QUALIFIERS, QUALIFIERS, Words};
use std::time::{Duration, Instant};

const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
        eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.\
        SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

/// Each text holds a secret, whichever rule finds it.
pub(crate) fn assert_found(texts: &[&str]) {
    for text in texts {
        assert!(find_secret(text).is_some(), "expected a match for {text:?}");
    }
}

/// Each text's findings are the one span given.
fn assert_spans(cases: &[(&str, &str)]) {
    for &(text, secret) in cases {
        assert_eq!(spans(text), [secret], "{text}");
    }
}

pub(crate) fn assert_clean(texts: &[&str]) {
    for text in texts {
        assert_eq!(find_secret(text), None, "expected no match for {text:?}");
    }
}

/// A config's field named `pass` alone is its password, in any syntax; `pass` inside a word
/// or as a test's outcome is not.
#[test]
fn a_field_named_pass_alone_holds_a_password() {
    assert_found(&[
        "{\"host\": \"db01\", \"pass\": \"tr0ut-lake\"}",
        "smtp:\n  user: ops\n  pass: 'Vel0cipede'",
        "<Pass>quillfeather9</Pass>",
    ]);
    assert_clean(&[
        "{\"pass\": true, \"fail\": false}",
        "pass: 42",
        "{\"bypass\": \"tr0ut-lake\"}",
        "\"pass\": \"${SMTP_PASS}\"",
    ]);
}

/// An element's start tag may carry attributes before its text (`<Pass encoding="base64">`);
/// a self-closing tag or an attribute alone holds no text.
#[test]
fn an_elements_attributes_come_before_its_text() {
    assert_found(&[
        "<Password type=\"plain\" scope='site'>Gr4nite!Lodge</Password>",
        "\t<secret encoding=\"base64\">ZDhmMmE5YzQxYjdlNjA1Mw==</secret>",
    ]);
    assert_clean(&[
        "<Password type=\"plain\" />",
        "<Password required=\"true\">{{ vault_password }}</Password>",
        "<Token kind=\"refresh\">see the docs</Token>",
    ]);
}

/// A run of one character inside a generated value (base64 of DER, whose zero bytes encode
/// as `AAAA…`) is the value's own, when what follows the run is random too; filler runs
/// with nothing random after them, or with text after them, stay filler.
#[test]
fn a_run_inside_a_generated_encoding_is_no_filler() {
    assert_found(&[
        "\"encryptedPassword\": \"MEIEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcECKq7Rm2vTz9wBBhVe3uLpQ8sNkXf4Ja6Yd1cGHt\"",
        "<EncryptedPassword>MDIEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcECHqLwTvRbMpZsYcNgKfEuDjXa</EncryptedPassword>",
    ]);
    assert_clean(&[
        "\"encryptedPassword\": \"MEIEEPgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
        "api_key = \"AKIA000000000000000000;Endpoint=https://Example.test:8443/Path9\"",
    ]);
}

/// A generated value whose alphabet holds the space (a salt of printable characters) is one
/// value, quoted, in an assignment or as a call's second argument; a sentence, code or a
/// format with spaces is not.
#[test]
fn a_generated_value_may_hold_spaces() {
    assert_found(&[
        "define('SECURE_AUTH_KEY', 'p|V2+q8]Lx Tz;c$N4@hK!7mR^e_w(3G`sB0>uJ6 dY9*Fo%Za1{X');",
        "app.secret_key = \"Qz7!vN2#kL9 pR4$wT8&mY3^bX6 cJ1*hF5(gD0)sA\"",
    ]);
    assert_clean(&[
        "define('AUTH_KEY', 'put your unique phrase here');",
        "secret_key = \"Use a long random string of at least 32 characters\"",
        "api_key = 'SELECT id, name FROM keys WHERE owner = 42 AND kind = 7'",
        "auth_key = '%Y-%m-%d %H:%M:%S %z (UTC) 1970-01-01T00:00:00Z'",
    ]);
}

/// Stand-in words around the words of the value's own key name the slot; with a digit or
/// with a word the key does not hold, the value is a password.
#[test]
fn stand_in_words_around_the_keys_own_words_are_a_placeholder() {
    assert_clean(&[
        "export GITLAB_TOKEN='yourGitlabToken'",
        "stripe_secret_key: sample-stripe-secret",
        "HEROKU_API_KEY=\"exampleHerokuApiKey\"",
    ]);
    assert_found(&[
        "export GITLAB_TOKEN='yourGitlabToken42'",
        "DB_PASSWORD='sampleLighthouse'",
    ]);
}

/// A SQL system variable (`@@NAME`) read into a session variable is a reference.
#[test]
fn a_sql_system_variable_is_a_reference() {
    assert_clean(&[
        "SET @OLD_AUTH_KEY_CACHE=@@AUTH_KEY_CACHE, AUTH_KEY_CACHE=0;",
        "SET @saved_secret_key=@@session.secret_key;",
    ]);
    assert_found(&["SET @secret_key = 'Zq8#Lm2vRt9!Kx';"]);
}

/// A key whose last word says what the value is about the secret (an algorithm, a header's
/// name, a time) holds no secret, whatever words stand between; its secret word alone does.
#[test]
fn a_keys_last_word_may_qualify_its_secret_word() {
    assert_clean(&[
        "REFRESH_TOKEN_SIGNING_ALGORITHM = 'RS512'",
        "apiKeyHeaderName: X-Vendor-Key9",
        "(!(pwdLastChangedTime=20240101000000Z))",
    ]);
    assert_found(&[
        "REFRESH_TOKEN_SIGNING = 'Qm7#tR2vLx9!pZ4w'",
        "apiKeyProd: Tz8qWm3vLp6xRn2kYs5d",
    ]);
}

/// An LDAP distinguished name after a key holding a secret word locates entries; a password
/// with `=` and `,` in it is still a password.
#[test]
fn an_ldap_distinguished_name_is_no_secret() {
    assert_clean(&[
        "LDAP_BIND_PASSWORD_BASE = 'cn=readers,ou=groups,dc=corp,dc=test'",
        "auth_ldap_user_dn: \"uid=svc-wiki,ou=apps,dc=corp,dc=test\"",
    ]);
    assert_found(&["ldap_password = 'k3=Vq9,Lm2=Zx7'"]);
}

/// The quoted name of an account's secret field (`'userPassword'`, a directory attribute) is
/// a name; words typed as a password are not.
#[test]
fn a_quoted_name_of_an_accounts_secret_field_is_a_name() {
    assert_clean(&[
        "ldap_password_attribute = 'userPassword'",
        "secret: \"consumerSecret\"",
        "mapping[\"token\"] = 'accessToken'",
    ]);
    assert_found(&[
        "secret: \"hiddenSecret\"",
        "password = 'SuperSecretPassword'",
        "password = 'userPassword7'",
    ]);
}

/// A pattern in a PEM body's place (a rule that finds keys) is no key.
#[test]
fn a_pattern_in_a_pem_bodys_place_is_no_key() {
    assert_clean(&[
        "rule: '-----BEGIN EC PRIVATE KEY-----(?s).{20,}?-----END EC PRIVATE KEY-----'",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\\n]+\n-----END OPENSSH PRIVATE KEY-----",
    ]);
    assert_kind(
        SecretKind::PrivateKey,
        &[
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oqEhf+I2lH8v\n-----END EC PRIVATE KEY-----",
        ],
    );
}

/// Single quotes expand no `$`: a `$` before letters of both cases and digits there is a
/// password's first character; `$NAME` and `$snake_name` stay references.
#[test]
fn a_dollar_in_single_quotes_may_start_a_password() {
    assert_found(&["db_password: '$uP3rDuP3r'", "connect(password='$kYw4lk3r9')"]);
    assert_clean(&[
        "db_password: '$DB_PASSWORD'",
        "password='$db_password_2'",
        "db_password: \"$dbPassword2\"",
    ]);
}

/// A file's location as grep, a compiler or a log quotes it (`path:line:`) starts that file's
/// line: a config literal after it is read as on the line itself; after prose it is not.
#[test]
fn a_quoted_files_location_starts_its_line() {
    assert_found(&[
        "$ grep -rn password etc/\netc/mail.cf:14: password = qzvmkrtwplsd",
        "WARN loader: deploy/app.ini:7:3: passwd = wrdlbrmpft",
    ]);
    assert_clean(&[
        "he said: password = qzvmkrtwplsd",
        "etc/mail.cf:14: password = ${MAIL_PASSWORD}",
        "note 3: password = required",
    ]);
}

/// Lines quoting a file after its location (a log's or grep's `… path:line: `) are read as the
/// file's lines: a PEM block spread over them is a key, an illustration is not.
#[test]
fn a_files_lines_quoted_in_a_log_read_as_the_file() {
    let key = "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oqEhf+I2lH8voAoGCCqGSM49";
    let log = |body: &str| {
        format!(
            "12:00:01 INFO loader[7]: keys/ec.pem:1: -----BEGIN EC PRIVATE KEY-----\n\
                 12:00:01 INFO loader[7]: keys/ec.pem:2: {body}\n\
                 12:00:01 INFO loader[7]: keys/ec.pem:3: -----END EC PRIVATE KEY-----"
        )
    };
    assert_kind(SecretKind::PrivateKey, &[log(key).as_str()]);
    assert_clean(&[log("<your key here>").as_str(), log("anything").as_str()]);
}

/// `plz`/`pls` are `please`: a stand-in's words; a password holding them with digits is not.
#[test]
fn plz_is_a_stand_ins_word() {
    assert_clean(&["JWT_SECRET='replace me pls'", "api_token: \"CHANGE-THIS-PLZ\""]);
    assert_found(&["JWT_SECRET='plz4Xq9!vRt2'"]);
}

/// A stand-in's marker with its `a` typed as `@` is the stand-in still; a password with an `@`
/// for an `a` but no marker, or with a digit, is a password.
#[test]
fn a_marker_spelt_with_an_at_sign_is_a_stand_in() {
    assert_clean(&[
        "\"api_token\": \"s@mple-token\"",
        "SESSION_SECRET=repl@ce_this_secret",
        "db:\n  passwd: ch@nge-me",
    ]);
    assert_found(&[
        "\"api_token\": \"Gr@pefruit-Lantern\"",
        "SESSION_SECRET=s@mple_Secret7",
        "db:\n  passwd: P@sswordx",
    ]);
}

/// A name path of code (`Digest::SHA1.hexdigest`) after a secret's key is code, called
/// without parentheses as Ruby does; a password with colons is still a password.
#[test]
fn a_name_path_of_code_is_no_secret() {
    assert_clean(&[
        "token = SecureRandom::Base64.urlsafe [32, nil].first",
        "let secret = crypto::hmac::derive_key(&salt);",
    ]);
    assert_found(&["secret = Zk9::mQ2!zLp7"]);
}

/// An element typed as a password (`type="password"`, a CI parameter's `spec="password …"`)
/// holds its password in its `value`; an empty or templated value, or another type, holds none.
#[test]
fn an_element_typed_password_holds_its_value() {
    assert_found(&[
        "<input class=\"form\" type=\"password\" value=\"Sn0wdr1ft-44\" name=\"pw\">",
        "<param name=\"env.DEPLOY_KEY\" value=\"q7Lm2vZx9\" spec=\"password display='hidden'\" />",
        "<input value=\"trombone77\" type=\"password\" name=\"pw\">",
    ]);
    assert_clean(&[
        "<input type=\"password\" value=\"\" name=\"pw\">",
        "<input type=\"password\" value=\"<%= @pw %>\">",
        "<input type=\"email\" value=\"ops@corp.test\" placeholder=\"password\">",
    ]);
}

fn assert_kind(expected: SecretKind, texts: &[&str]) {
    for text in texts {
        assert_eq!(
            find_secret(text),
            Some(expected),
            "expected {expected:?} for {text:?}"
        );
        assert!(is_secret_like(text));
    }
}

/// The text of each finding, for span assertions.
fn spans(text: &str) -> Vec<&str> {
    findings(text).iter().map(|f| &text[f.start..f.end]).collect()
}

/// Each text's findings are the spans given with it (none for an ordinary look-alike).
fn assert_each_spans(cases: &[(&str, &[&str])]) {
    for &(text, found) in cases {
        assert_eq!(spans(text), found, "{text}");
    }
}

#[test]
fn comparisons_declarations_and_literal_arguments_are_assignments() {
    assert_eq!(spans(r#"if (pw == "Qx7#vLm2!pR9") {"#), ["Qx7#vLm2!pR9"]);
    assert_eq!(
        spans(r#"if ("Qx7#vLm2!pR9" !== db_password) {"#),
        ["Qx7#vLm2!pR9"]
    );
    assert_eq!(spans(r#"if creds.Secret != 'k9Vt-2mQx!Lr' {"#), ["k9Vt-2mQx!Lr"]);
    assert_eq!(
        spans(r#"char api_secret[25] = "Qx7#vLm2!pR9";"#),
        ["Qx7#vLm2!pR9"]
    );
    assert_eq!(spans(r#"std::string secret("Qx7#vLm2!pR9");"#), ["Qx7#vLm2!pR9"]);
    assert_clean(&[
        r#"if (password == "") {"#,
        r#"if token != "undefined" {"#,
        r#"if password == other_password:"#,
        r#"if (password === "admin") {"#,
        r#"var c = new ClientSecretCredential("72f9d8bf-86f1-41af-91ab-2d7cd011db47", id, secret);"#,
        r#"secret("name")"#,
    ]);
}

#[test]
fn a_typed_word_compared_with_a_password_or_a_bare_secret_is_the_password() {
    assert_eq!(
        spans("if username == 'bob' and password =='logmein':"),
        ["logmein"]
    );
    assert_eq!(spans(r#"if creds.Secret != "open-sesame" {"#), ["open-sesame"]);
    assert_clean(&[
        r#"if password != "expired":"#,
        r#"if password == "password":"#,
        r#"if password == "changeme":"#,
        r#"if secret_type == "generic":"#,
        r#"if client_secret == "sandbox-client":"#,
        r#"if token != "undefined" {"#,
    ]);
}

#[test]
fn the_key_of_vault_operator_unseal_is_a_secret() {
    let key = "98m+o2ylRhVbOi+3o5ub6PbP343ocFUVORgSYeypMDjh";
    assert_eq!(
        spans(&format!("oc exec -ti vault-0 -- vault operator unseal {key}")),
        [key]
    );
    assert_eq!(spans(&format!("vault unseal -migrate {key}")), [key]);
    assert_kind(
        SecretKind::CommandLine,
        &[&format!("vault operator unseal {key}")],
    );
    assert_clean(&[
        "vault operator unseal",
        "vault operator unseal -reset",
        "vault operator unseal $UNSEAL_KEY",
        "vault operator init -key-shares=5 -key-threshold=3",
        "run vault operator unseal three times",
    ]);
}

#[test]
fn a_token_alone_below_a_label_line_naming_a_secret_is_one() {
    let banner = "Jenkins initial setup is required.\nPlease use the following password to proceed \
            to installation:\n\nbd9627decc6346d780b3b6ab6ea8fe1f\n\nThis may also be found at: \
            $JENKINS_HOME/secrets/initialAdminPassword";
    assert_eq!(spans(banner), ["bd9627decc6346d780b3b6ab6ea8fe1f"]);
    assert_eq!(
        spans("Your new API key:\r\n\r\n  Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\r\n"),
        ["Zk3n8QwL2xVb7Rt5Yp1Mc9Ds"]
    );
    assert_clean(&[
        "Steps to reset your password:\n\n1. open the settings",
        "The token was:\n\nmy_access_token_refresh_handler_v2",
        "The commit sha is:\n\n1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c",
        "the key fingerprint:\n\nSHA256:Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        "Token endpoint:\n\nhttps://auth.example.com/oauth2/v1/Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        "Where do I put the token:\n\nsrc/config/Zk3n8QwL2xVb7Rt5Yp1Mc9Ds.json",
        "Please use the following password:\n\n\n\nZk3n8QwL2xVb7Rt5Yp1Mc9Ds",
    ]);
}

#[test]
fn an_absolute_path_after_a_secret_word_is_no_value_but_an_array_literal_is() {
    assert_clean(&[
        r#""/en/enterprise/3.0/creating-a-strong-password":"/en/enterprise-server@3.0/auth""#,
        r#""password":"/en/enterprise-server@3.0/auth""#,
    ]);
    assert_eq!(
        spans(r#""password":"/Xk9mQ2zLp7vR4tB8nW3c""#),
        ["/Xk9mQ2zLp7vR4tB8nW3c"]
    );
    assert_eq!(
        spans("secret[] = m{{h}o)p${e]nob(ody[finds>-_$#thisone}};"),
        ["m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"]
    );
    assert_clean(&["char secret[25] = {0};", "secret[] = getSecret(name);"]);
}

#[test]
fn a_quoted_word_in_a_sentence_about_a_password_is_the_password() {
    assert_eq!(spans(r#"the default password is "marmalade""#), ["marmalade"]);
    assert_eq!(
        spans("the password for user 'deploy' is 'tangerine' here"),
        ["tangerine"]
    );
    assert_eq!(spans(r#"password = "lemon curd pie""#), ["lemon curd pie"]);
    assert_clean(&[
        r#"if the password is "wrong" we retry"#,
        r#"the password field is "required""#,
        r#"password = "Enter your password""#,
        r#"error = "Passwords do not match""#,
    ]);
}

#[test]
fn make_php_sql_and_ini_continuation_syntaxes() {
    for text in [
        "DB_PASSWORD ?= Hx7!kq2Lm9",
        "DB_PASSWORD ::= Hx7!kq2Lm9",
        "DB_PASSWORD += Hx7!kq2Lm9",
        "$password .= \"Hx7!kq2Lm9\";",
        "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('Hx7!kq2Lm9');",
        "[database]\npassword =\n    Hx7!kq2Lm9",
    ] {
        assert_eq!(spans(text), ["Hx7!kq2Lm9"], "{text:?}");
    }
    assert_clean(&[
        "DB_PASSWORD ?= $(shell cat .pw)",
        "[database]\npassword =\n\n[cache]",
        "secretKeyRef:\n  name: db-credentials\n  key: password",
    ]);
}

#[test]
fn a_quoted_password_may_open_a_template_it_never_closes() {
    assert_eq!(spans(r#"password := "Hx7${q2Lm9""#), ["Hx7${q2Lm9"]);
    assert_eq!(spans(r#"password: "{{Hx7!kq2Lm9""#), ["{{Hx7!kq2Lm9"]);
    // A reference inside a password's own characters is part of the literal: only a value
    // that is references (and separators, a plain word) is a template.
    assert_eq!(spans(r#"password: "ab${c}d9Xz""#), ["ab${c}d9Xz"]);
    assert_eq!(spans("db_pass = q{{w}}8Rt!x"), ["q{{w}}8Rt!x"]);
    assert_clean(&[
        r#"password: "${DB_PASSWORD}""#,
        r#"password = "{{ .Values.db.password }}""#,
        r#"DB_PASSWORD="${DB_USER}:${DB_PASS}""#,
        r#"secret: "${PREFIX}_secret""#,
    ]);
}

#[test]
fn telegram_bot_tokens_with_and_without_their_usual_head() {
    assert_kind(
        SecretKind::Vendor("telegram_token"),
        &[
            "bot 5829104736:AAGq3vX9LmZ2pR8tK1wN6yB4cD7fH0jS5eU",
            "bot 869511423:Qw7tOM4-oZANUkq653PAPbo4HLs3DCd9NCX",
        ],
    );
    assert_clean(&[
        "1700000000:abcdefghijklmnopqrstuvwxyzabcdefghi",
        "12345678:short",
        "api_key: '5555555555:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'",
        "TELEGRAM_TOKEN=123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    ]);
}

#[test]
fn a_vendors_documented_example_key_is_no_secret() {
    assert_clean(&[
        "firebase: AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
        "curl https://api.stripe.com/v1/charges -u sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
    ]);
    // One character off is a key like any other.
    assert_kind(
        SecretKind::Vendor("google_api_key"),
        &["firebase: AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIt"],
    );
}

#[test]
fn text_escaped_for_json_is_read_as_its_writer_meant_it() {
    // A document in a JSON string: its lines, its quotes and its `\u` escapes, and the span
    // is the escaped text's.
    let log = r#"{"role": "user", "content": "please check:\n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"}"#;
    assert_eq!(spans(log), ["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"]);
    let config = r#"{"prompt": "```\n{\n  \"client_secret\": \"p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5\"\n}"}"#;
    assert_eq!(spans(config), ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]);
    let unicode = r#"{"prompt": "\u5bc6\u7801\uff1aTQjz2PL0TqOVVB\uff0c\u5e2e\u6211\u770b\u770b"}"#;
    assert_eq!(spans(unicode), ["TQjz2PL0TqOVVB"]);
    // A sentence that ends where the string does.
    assert_eq!(
        spans(r#"{"prompt": "my password is yjFcoHmQK52"}"#),
        ["yjFcoHmQK52"]
    );
    let (redacted, _) = redact(config);
    assert!(
        redacted.contains(r#"\"client_secret\": \"[REDACTED:"#),
        "{redacted}"
    );
    assert_clean(&[
        r#"{"prompt": "Passwort: \u00e4ndern, dann neu anmelden"}"#,
        r#"{"prompt": "let apiKey = settings.apiKey ?? ProcessInfo.processInfo.environment[\"API_KEY\"]"}"#,
        r#"{"log": "token refreshed\n  expires_in: 3600\n  token_type: \"Bearer\""}"#,
        r#"{"prompt": "why is my password expired"}"#,
    ]);
}

#[test]
fn code_escaped_for_html_is_read_as_its_source() {
    let page = "<pre><code>{\n  &quot;client_secret&quot;: &quot;p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5&quot;\n}</code></pre>";
    assert_eq!(spans(page), ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]);
    assert_clean(&[
        // The tag around a documented example is not part of it.
        "<pre><code>snyk_token = 123e4567-e89b-12d3-a456-426614174000</code></pre>",
        "<pre><code>String password = &quot;password&quot;;</code></pre>",
    ]);
    // Markup in a prompt that is not escaped HTML is its text (an XML element's value).
    assert_eq!(spans("<password>Qx7#vLm2!pR9</password>"), ["Qx7#vLm2!pR9"]);
}

#[test]
fn blanks_around_an_elements_text_are_layout() {
    assert_eq!(spans("<password>  hunter2  </password>"), ["hunter2"]);
    assert_eq!(
        spans("<settings>\n<passphrase>\tgpgPassphrase\t</passphrase>\n</settings>"),
        ["gpgPassphrase"]
    );
    assert_clean(&[
        "<password>   </password>",
        "<password>  ${env.MAVEN_REPO_PASS}  </password>",
        "<password>  password  </password>",
    ]);
}

#[test]
fn an_elements_value_never_runs_into_its_closing_tag() {
    // Whichever rule reads the element's text, the span ends where the closing tag starts,
    // symbols in the value (`=`, `}`, `#`) or not, quoted or not.
    for (key, value) in [
        ("password", "Xk9#mQ2z$!pL@7="),
        ("secret", "Xk9#mQ2z$!pL@7="),
        ("apiKey", "vR4}zLp7=Qx7#mQ2"),
        ("passphrase", "n7$Kq2=Wx!9pLz"),
        ("client_secret", "Hj7kQ2mZp9Xw4Rt8Vb3N"),
        ("token", "\"Xk9#mQ2z$!pL@7=\""),
    ] {
        let text = format!("<settings>\n<{key}>{value}</{key}> next\n</settings>");
        assert_eq!(spans(&text), [value], "{text}");
    }
    // Maven's encrypted form (`{…}`, ciphertext under a master password kept elsewhere) fills
    // the element as a slot does, and is not the password.
    assert_clean(&[
        "<password>{COQLCE6DU6GtcS5P=}</password>",
        "<settings>\n<server>\n<password>{Wq3vH8kLz0pN4sB=}</password>\n</server>\n</settings>",
        "<passphrase>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</passphrase>",
    ]);
    // Without its braces the same text is a value, in an element or on a line naming it.
    assert_found(&[
        "<passphrase>jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=</passphrase>",
        "the gpg passphrase is jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=",
        "<password>Wq3vH8kLz0pN4sB=</password>",
    ]);
}

#[test]
fn mavens_master_password_is_a_password() {
    for (text, value) in [
        (
            "<settingsSecurity>\n<master>plainMaster</master>\n</settingsSecurity>",
            "plainMaster",
        ),
        (
            "<settingsSecurity><master>  Tr0ub4dor&3  </master></settingsSecurity>",
            "Tr0ub4dor&3",
        ),
        (
            "<?xml version=\"1.0\"?>\n<settingsSecurity>\n  <relocation>x</relocation>\n  <master>hunter2hunter</master>\n</settingsSecurity>",
            "hunter2hunter",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
    assert_clean(&[
        // Encrypted, a reference, empty; or a `<master>` of another document.
        "<settingsSecurity>\n<master>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</master>\n</settingsSecurity>",
        "<settingsSecurity>\n<master>${env.MAVEN_MASTER}</master>\n</settingsSecurity>",
        "<settingsSecurity>\n<master>  </master>\n</settingsSecurity>",
        "<branches>\n<master>plainMaster</master>\n</branches>",
        "<settingsSecurity>\n</settingsSecurity>\n<config><master>plainMaster</master></config>",
    ]);
}

#[test]
fn a_long_vendor_prefix_glued_after_letters_is_read() {
    for (text, token) in [
        (
            "our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",
            "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",
        ),
        (
            "set mysk_live_Xk9mQ2zLp7vR4wT8nB3hJ6cFq then",
            "sk_live_Xk9mQ2zLp7vR4wT8nB3hJ6cFq",
        ),
        (
            "prodpscale_tkn_q7Wm2xR9kL4vZp8TnB3hJ6cFqXk9mQ2zLp7vR4wT8",
            "pscale_tkn_q7Wm2xR9kL4vZp8TnB3hJ6cFqXk9mQ2zLp7vR4wT8",
        ),
    ] {
        assert_eq!(spans(text), [token], "{text}");
    }
    assert_clean(&[
        // Words, or filler, after a glued prefix; a short prefix glued to a word is its letters.
        "ask_live_superlive1",
        "ourgithub_pat_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "risk_live_reporting_dashboard_enabled",
        "ourghp_Xk9mQ2zLp7vR4wT8nB3hJ6cFqLp7vR4wT8nB",
    ]);
}

#[test]
fn the_rfc_example_uuid_is_no_secret_wherever_it_stands() {
    assert_clean(&[
        "snyk_token = 123e4567-e89b-12d3-a456-426614174000",
        "bugsnag secret 123e4567-e89b-12d3-a456-426614174000",
        "holidayapiKEY-123e4567-e89b-12d3-a456-426614174000",
    ]);
    assert_eq!(
        spans("snyk_token = 0f3c9a71-5b2e-4d8c-a6f1-93e2b7c40d5a"),
        ["0f3c9a71-5b2e-4d8c-a6f1-93e2b7c40d5a"]
    );
}

#[test]
fn words_naming_the_credential_may_stand_between_a_provider_and_its_value() {
    // Blanks between (`pdfshift ACCESS …`), or dashes glued to the value: the value counts
    // as after the provider's word alone, and a hex value with them.
    assert_found(&[
        "pdfshift ACCESS 9f71c52d839b5cd527645e42b5134f8b",
        "nimble private access key 3mL6pHJQ7NMK3v8Z1J6n2L9F6qK2dH",
        "prospect-secret-5f4dcc3b5aa765d61d8327deb882cf91",
        "buttercmsPRIVATEkey-ab8f9c72ca483c3b6c3d4e6e8f9284ab56cd78f0",
    ]);
    assert_clean(&[
        // Another word, or a hex suffix with no word naming a credential: a build's.
        "pdfshift version 9f71c52d839b5cd527645e42b5134f8b",
        "prospect-4d9f1e2b6ac3fd80e162b12f8a9c45f1",
        "pdfshift ACCESS 00000000000000000000000000000000",
    ]);
}

#[test]
fn pass_as_a_config_keys_last_segment_names_a_password() {
    assert_eq!(spans("REACT_APP_AUTH_PASS=marmalade"), ["marmalade"]);
    assert_eq!(spans("smtp.pass = tangerine7"), ["tangerine7"]);
    assert_clean(&[
        "TEST_PASS=true",
        "CHECKS_PASS=3",
        "DB_PASS=$DB_PASSWORD",
        "bypass=marmalade",
    ]);
}

#[test]
fn an_api_key_passed_as_curls_user_is_the_secret() {
    assert_eq!(
        spans(r#"curl -u "k7Qz2mWp9Lx!t:" https://api.example.test"#),
        ["k7Qz2mWp9Lx!t"]
    );
    assert_clean(&[
        "curl -u admin: https://localhost:9200",
        "curl -u $API_KEY: https://api.example.test",
    ]);
}

#[test]
fn a_mailchimp_key_is_told_by_its_data_center_suffix() {
    assert_kind(
        SecretKind::Vendor("mailchimp_key"),
        &["the newsletter job printed 5d1f0b8e93a27c46e0d9b13f7a2c8e64-us21 and stopped"],
    );
    assert_clean(&[
        "00000000000000000000000000000000-us21",
        "5d1f0b8e93a27c46e0d9b13f7a2c8e64-used",
        "x5d1f0b8e93a27c46e0d9b13f7a2c8e6-us21",
        "5D1F0B8E93A27C46E0D9B13F7A2C8E64-us21",
    ]);
}

#[test]
fn a_java_system_property_is_a_key() {
    assert_eq!(
        spans("java -Dspring.datasource.password=Vq3!xLm9Tz -jar app.jar"),
        ["Vq3!xLm9Tz"]
    );
    assert_clean(&["java -Dspring.profiles.active=prod -Dfile.encoding=UTF-8 -jar app.jar"]);
}

#[test]
fn an_ldap_bind_gives_its_third_argument() {
    assert_eq!(
        spans("new DirectoryEntry(\"LDAP://corp.example\",\n    \"svc@corp.example\",\n    \"Tq8mZx31\");"),
        ["Tq8mZx31"]
    );
    // A weak literal in the password's place is still the password; the slot's name is not.
    assert_eq!(
        spans(r#"DirectoryEntry("LDAP://10.0.0.1", "corp\\svc", "secret")"#),
        ["secret"]
    );
    assert_clean(&[r#"DirectoryEntry("LDAP://10.0.0.1", "corp\\svc", "password")"#]);
}

#[test]
fn code_around_a_value_is_no_value() {
    assert_clean(&[
        r#"PASSWORD=$($(dirname $0)/bin/get-setting DB_PASSWORD)"#,
        r#""//localhost:1337/:_password = "+new Buffer("feast").toString("base64")"#,
        r#"echo 'password = '.$p['config']['daemon_password']."\n";"#,
        r#"usernameLabel:"Username:",passwordLabel:"Password:",rememberMeLabel:"Remember me:""#,
        r#"- echo 'export DATABASE_PASSWORD="'$PRECOMPILE_PASSWORD'"' >> .env"#,
        r#""password": "&lt;YOURPASSWORD&gt;""#,
        r#"text << "Password=#{password}, ""#,
        r#"ChangePasswordPolicy = "arn:aws:iam::aws:policy/IAMUserChangePassword""#,
        "secret_oPp4m4V04lEWqgLGyh?N7b8H9JLANmyE1AYl2aG3aTN",
    ]);
}

#[test]
fn a_flags_value_in_an_argument_list_written_as_data() {
    assert_found(&[
        "spec:\n  containers:\n    - name: api\n      args: [\"serve\", \"--db-password\", \"Vq7#mZ2pL9xKw\"]",
        "CMD [\"app\", \"--api-token\", \"1lpWHnQWapOocv1fwQdYS3GcqkeAYPwE\"]",
        "cmd := exec.Command(\"psql\", \"--password\", \"Vq7#mZ2pL9xKw\")",
        "subprocess.run(['deploy', '--secret',\n    'q9XbN2vLp7RzT4kW8mYc3dF'])",
        "        args:\n          - --api-key\n          - 1lpWHnQWapOocv1fwQdYS3GcqkeAYPwE\n          - --port=8080",
    ]);
    assert_clean(&[
        // A variable, a reference, a stand-in or the next flag is no value.
        "args = ['--password', pw, '--user', user]",
        "args: [\"--password\", \"$(DB_PASSWORD)\"]",
        "        args:\n          - --api-key\n          - $(API_KEY)",
        "args: [\"--password\", \"--verbose\"]",
        "['--password', '<your password>']",
        "parser.add_argument('--password', default='', help='the database password')",
    ]);
}

#[test]
fn user_then_password_flags_and_named_parameters() {
    assert_eq!(
        spans(r"psexec \\10.0.0.5 -u Administrator -p Kx9vRt2q cmd"),
        ["Kx9vRt2q"]
    );
    assert_eq!(
        spans("Connect-VIServer -Server vc01 -User admin -Password Vm9!wXr2"),
        ["Vm9!wXr2"]
    );
    assert_clean(&[
        "mysql -u root -p shop_db",
        "psexec \\\\host -u Administrator -p $Password cmd",
        "Connect-VIServer $host -User $user -Password $password",
        "docker run -u 1000 -p 8080:80 nginx",
    ]);
}

#[test]
fn kerberos_and_cisco_hashes_and_unsigned_jwts() {
    let krb = format!(
        "$krb5asrep$23$bob@corp.example:{}${}",
        "3e15".repeat(8),
        "9d07c1a2".repeat(24)
    );
    assert_kind(
        SecretKind::PasswordHash,
        &[
            &krb,
            "$8$Tq2X/fE4KGHOzU$pEhnEvxrZaynpi8j4f.EMHr6M.FzU8xnZnBr/tJdFWk",
        ],
    );
    let header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
    let claims = "eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0";
    assert_kind(
        SecretKind::Jwt,
        &[&format!("the claims are in {header}.{claims} here")],
    );
    assert_clean(&[&format!("the header {header} alone"), "$krb5asrep$23$x$abc"]);
}

#[test]
fn pem_blocks_without_a_body_are_illustrations() {
    assert_clean(&[
        "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY----------END OPENSSH PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\n<your key here>\n-----END RSA PRIVATE KEY-----",
    ]);
    assert_kind(
        SecretKind::PrivateKey,
        &["-----BEGIN PGP PRIVATE KEY BLOCK-----\n=8xQN\n-----END PGP PRIVATE KEY BLOCK-----"],
    );
}

/// Illustrations in other clothes: a block on one line of JSON (`\n` escapes) with `...` for
/// its body, a diff's `+` before `xxx`, base64 that decodes to words; a key in the same
/// clothes is still a key.
#[test]
fn pem_bodies_typed_as_counts_are_illustrations() {
    let typed = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdefghijklmnopqrstuvwxyz\n\
            ABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890abcdefghijklmnop\n\
            qrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ12345678\n-----END RSA PRIVATE KEY-----";
    assert_clean(&[typed]);
    // A generated body, and one with a count in part only, are keys.
    let real = "-----BEGIN RSA PRIVATE KEY-----\nYObVAoGAGsWtK3K2Q4OSf6Z1az3AuDfo8xj9/UBuBQe1Op9RFTXps84foAqEgFwj\n\
            7eUHc9npsdql24xsVK8huo9VKPu/mrDStv8JYRWP4cSUXWWBx5oGpPBP7uaMgQCx\n-----END RSA PRIVATE KEY-----";
    let part = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdefYObVAoGAGsWtK3K2Q4OSf6Z1az3AuDfo8xj9\n\
            7eUHc9npsdql24xsVK8huo9VKPu/mrDStv8JYRWP4cSUXWWBx5oGpPBP7uaMgQCx\n-----END RSA PRIVATE KEY-----";
    assert_kind(SecretKind::PrivateKey, &[real, part]);
}

#[test]
fn pem_illustrations_in_json_diffs_and_encoded_words_are_not_keys() {
    assert_clean(&[
        r#"SA={"private_key":"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n","client_email":"a@b.example"}"#,
        "```diff\n+-----BEGIN PRIVATE KEY-----\n+xxx\n+-----END PRIVATE KEY-----\n```",
        "-----BEGIN PRIVATE KEY-----\nYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\n-----END PRIVATE KEY-----",
    ]);
    assert_kind(
        SecretKind::PrivateKey,
        &[
            r#""key": "-----BEGIN PRIVATE KEY-----\nzFMgU9qbVUy7Rh5N9oU6Y2xUaMeJuCNrqjdoo+d9YgIYr9mDGfMpS9JJl0mOGeEE\n-----END PRIVATE KEY-----\n""#,
            "```diff\n+-----BEGIN PRIVATE KEY-----\n+zFMgU9qbVUy7Rh5N9oU6Y2xUaMeJuCNrqjdoo+d9YgIYr9mDGfMpS9JJl0mOGeEE\n+-----END PRIVATE KEY-----\n```",
        ],
    );
}

/// A value judged as what it is: a URL whose userinfo is the user again or a stand-in, a weak
/// key's base64 of plain words, a token that says it is made up.
#[test]
fn urls_encoded_words_and_made_up_tokens_under_a_key_are_not_secrets() {
    assert_clean(&[
        r#"const MYSQL_IDENTICAL_CREDENTIALS = "mysql://mysql:mysql@localhost:3306/database";"#,
        "DB_CREDENTIALS=postgres://username:password@localhost/db",
        "ANY_KEY = ZHVtbXkgdGV4dCBkYXRhIGRhdGEgZGF0YQ==",
        "DOCKER_TOKEN=not_a_real_token",
        "hf_FakeFakeFakeFakeFakeFakeFakeFakeFa",
    ]);
    assert_kind(
        SecretKind::Assignment,
        &[
            "DB_CREDENTIALS=postgres://app:Xk9mQ2vL7pR4@localhost/db",
            "ANY_KEY = Xk9mQ2vL7pR4wT6yZ1nB8cD3fG5hJ0kM",
        ],
    );
}

/// `com` and `sur` qualify a secret word only glued to it (`compass`, `surpass`); apart they are
/// a host's segment, as in Bundler's per-host credential keys.
#[test]
fn a_hosts_segment_before_a_secret_word_is_no_qualifier() {
    assert_found(&[
        "export BUNDLE_PKGS__ACME__COM_TOKEN=\"c41d9e07:5ab3f2e8\"",
        "PYPI__INTERNAL__COM_PASSWORD: Tq7vR2xL9mW4",
        "REGISTRY_SUR_TOKEN = 'h7Kq2mZ9xR4vL8pW3nT6'",
    ]);
    assert_clean(&[
        "compass = \"Tq7vR2xL9mW4\"",
        "surpass_count = 'h7Kq2mZ9xR4vL8pW3nT6'",
    ]);
}

/// A form's anti-forgery token is a nonce the page hands every visitor; the key that signs
/// such tokens, and any other token, is a credential.
#[test]
fn a_forms_anti_forgery_token_is_no_credential() {
    assert_clean(&[
        "<input type=\"hidden\" name=\"authenticity_token\" value=\"q8Vn2-Lk_r7TzW0pXc4yHb6uJd1sFm9gAe3oNi5vKw\" />",
        "headers['X-CSRF-Token'] = 'Rk7wP2nZ9qL4xV8mT3bY6cJ1'",
        "<input name=\"__RequestVerificationToken\" type=\"hidden\" value=\"CfDJ8Nk3pQ2vZx7LmW9aB4cR1tY6uE0sH5gJ\">",
        "authenticity = 'q8Vn2Lkr7TzW0pXc4yHb6uJd1sFm9gAe'",
    ]);
    assert_found(&[
        "WTF_CSRF_SECRET_KEY = 'Rk7wP2nZ9qL4xV8mT3bY6cJ1'",
        "refresh_token = 'q8Vn2Lkr7TzW0pXc4yHb6uJd1sFm9gAe'",
        "auth_token: q8Vn2Lkr7TzW0pXc4yHb6uJd1sFm9gAe",
    ]);
}

/// A key whose word after the secret's names its user (`SecretsUser`, `token_user`) holds an
/// account or a role's id, not the secret; a password named after the user is one.
#[test]
fn a_key_naming_a_secrets_user_holds_an_account() {
    assert_clean(&[
        "StorageSecretsUser: '4b7e0c1a-93d2-4f6e-8a15-2c9b7d3e6f01'",
        "vault_token_user = \"Xk29dLq8Zm3Pw7Rt\"",
        "ci_secret_user: svc-9f3k2x7q",
    ]);
    assert_found(&[
        "SECRET_USER_PASSWORD = 'Xk29dLq8Zm3Pw7Rt'",
        "user_token = 'Xk29dLq8Zm3Pw7RtLq8Zm3Pw'",
        "vault_token = \"hvs.Xk29dLq8Zm3Pw7RtLq8Zm3Pw\"",
    ]);
}

/// A JSON Web Token encoded once more in base64 (a Kubernetes Secret's `data`) is a token.
#[test]
fn a_jwt_encoded_in_base64_is_a_token() {
    use base64_of_jwt as b64;
    fn base64_of_jwt() -> String {
        let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in JWT.as_bytes().chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (k, &b)| n | u32::from(b) << (16 - 8 * k));
            for k in 0..4 {
                if k <= chunk.len() {
                    out.push(char::from(table[(n >> (18 - 6 * k) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
    let encoded = b64();
    assert!(encoded.starts_with("ZXlK"));
    assert_found(&[
        &format!("apiVersion: v1\nkind: Secret\ndata:\n  id-token: {encoded}\n"),
        &format!("echo {encoded} | base64 -d"),
    ]);
    assert_clean(&[
        "ZXlK is how eyJ reads once more in base64",
        "ZXlKXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    ]);
}

/// A value that says in words it is a stand-in (`do_not_use_this_in_production`, a test's
/// `valid_password`) is none; a password that merely holds such words is one.
#[test]
fn a_value_saying_it_is_for_no_real_use_is_a_stand_in() {
    assert_clean(&[
        "api_secret: do-not-use-in-production",
        "\"signing_secret\": \"dont_use_this_in_production\"",
        "DB_PASSWORD=invalid_password",
        "auth_token = 'wrong-token'",
    ]);
    assert_found(&[
        "api_secret: do-not-use-9Xq2Lw7Rk",
        "DB_PASSWORD=Production2024!",
        "auth_token = 'inProd_7Gk2Qx9Lm4Zw'",
    ]);
}

/// A label written with HTML's numeric character references (`S&#228;kerhet`, CJK as `&#NNNNN;`)
/// is text; a value with other symbols among them is judged as any other.
#[test]
fn a_label_written_as_html_character_references_is_text() {
    assert_clean(&[
        "\"passwordLabel\": \"Kenn&#252;bersicht\", \"password\": \"Mot de passe &#224; changer\"",
        "secret_hint = '&#31192;&#23494;&#30340;'",
        "\"password\": \"&#x30D1;&#x30B9;&#x30EF;\"",
    ]);
    assert_found(&[
        "\"password\": \"Gr4n&#246;te!Lodge\"",
        "\"password\": \"&#65;&#66;x9Qv2Lw7\"",
    ]);
}

/// The word for password in a language, where the password goes, is the field's label in a
/// translation file; a password built on such a word is a password.
#[test]
fn the_word_for_password_in_a_language_is_a_label() {
    assert_clean(&[
        "\"Password\": \"Salasana\",\n\"Username\": \"Käyttäjätunnus\"",
        "password: Hasło",
        "login.password = Adgangskode",
    ]);
    assert_found(&["password: Salasana2024", "\"Password\": \"Lösenord!9xQ\""]);
}

/// A setting's dotted name typed where its secret goes (`app.oauth.client.secret`) names the
/// setting; a random value with dots does not.
#[test]
fn a_settings_dotted_name_in_its_secrets_place_names_it() {
    assert_clean(&[
        "client_secret: \"app.oauth.client.secret\"",
        "\"api_key\": \"v2.billing.api.key\"",
    ]);
    assert_found(&[
        "client_secret: \"q7.Xk2L9.mW4RtZ8.secret\"",
        "\"api_key\": \"v2.Bq8xLm3Zr7Tw.key.k9\"",
    ]);
}

/// A PEM header inside a string whose quotes are escaped (a template in JSON, a Go string) is
/// named in code, not a key; a header with its body after it is a key.
#[test]
fn a_pem_header_between_escaped_quotes_is_code() {
    assert_clean(&[
        "{\"tpl\": \"{{ .key | trimPrefix \\\"-----BEGIN EC PRIVATE KEY-----\\\" }}\"}",
        "value: \"{{ .Data.key | regexReplaceAll \\\"-----BEGIN EC PRIVATE KEY-----\\\"\nrest: 1",
    ]);
    assert_found(&[
        "{\"key\": \"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBkFq2vX8mT3pLw9Rz7Yc4Nd1Hs6Ja0Ke5Uf2Gi3Lb8oAoGCCqGSM49\\nAwEHoUQDQgAEx7Pq2Lm9Zr4Tw8Vb3Nc6Hd1Ks5Jf0Ge7Ua2Yi9Ro4Xq1Wt3Pz8M\\n-----END EC PRIVATE KEY-----\"}",
    ]);
}

/// A PEM block with no key in it behind a log's prefix on every line is an illustration, as it is
/// at the margin; a key's body behind the same prefix, or at the margin under a header that
/// stands after other text, is a key.
#[test]
fn a_pem_illustration_behind_a_log_prefix_is_no_key() {
    assert_clean(&[
        "Jan 12 10:22:31 web01 sshd-keygen[311]: -----BEGIN EC PRIVATE KEY-----\nJan 12 10:22:32 web01 sshd-keygen[311]: <paste the key of the deploy user here>\nJan 12 10:22:33 web01 sshd-keygen[311]: -----END EC PRIVATE KEY-----",
        "# -----BEGIN RSA PRIVATE KEY-----\n# (the deploy key goes here)\n# -----END RSA PRIVATE KEY-----",
    ]);
    assert_found(&[
        "Jan 12 10:22:31 web01 sshd-keygen[311]: -----BEGIN EC PRIVATE KEY-----\nJan 12 10:22:32 web01 sshd-keygen[311]: EqV8ib8HDy88YtDtXbiufMdI8X2Y4rUmer/BH3M1XS0DRdJuPnBIKpi99lSi0tcL\nJan 12 10:22:33 web01 sshd-keygen[311]: 21pffWQJEeNajnez0LHtfROUrWW6XnI3EM3HMRb1OcWrhQ7TTJ+chcVG6MOwUxOV\nJan 12 10:22:34 web01 sshd-keygen[311]: HMWndqNCIEPx3mnPQC4vkRB5ICpeyOxJRkSq1LI7S1L10e0tza93Ce6KRDiKpFfe\nJan 12 10:22:35 web01 sshd-keygen[311]: -----END EC PRIVATE KEY-----",
        "note: -----BEGIN EC PRIVATE KEY-----\nEqV8ib8HDy88YtDtXbiufMdI8X2Y4rUmer/BH3M1XS0DRdJuPnBIKpi99lSi0tcL\n21pffWQJEeNajnez0LHtfROUrWW6XnI3EM3HMRb1OcWrhQ7TTJ+chcVG6MOwUxOV\nHMWndqNCIEPx3mnPQC4vkRB5ICpeyOxJRkSq1LI7S1L10e0tza93Ce6KRDiKpFfe\n-----END EC PRIVATE KEY-----",
    ]);
}

/// A name, a dash between blanks, then a UUID is a catalogue's entry and its id (a rule list, a
/// test's title); a random value after that dash, or a UUID after a key's own operator, is a
/// secret.
#[test]
fn a_uuid_after_a_spaced_dash_is_an_entrys_id() {
    assert_clean(&[
        "// \"Hardcoded Secret\" - 5f0c2a9e-7b1d-4c3e-9a8f-2d6e1b0c4a7f  allow-rule-test",
        "* Service token - 0b6f4e2a-91c3-4d7e-8f25-6a1c3e9b7d40 (deprecated)",
    ]);
    assert_found(&[
        "service token - Qm7xL2vR9kT4wZ8nB3cY6pD1",
        "SERVICE_TOKEN: 0b6f4e2a-91c3-4d7e-8f25-6a1c3e9b7d40",
    ]);
}

/// A key written as one before the spaced dash (an identifier, words inside a sentence) labels
/// the UUID after it: Heroku's API keys are UUIDs.
#[test]
fn a_uuid_after_a_keys_spaced_dash_is_its_value() {
    assert_clean(&["# Generic Password - 487f4be7-3fd9-4506-a07a-eae252180c08  positive-test"]);
    assert_found(&[
        "HEROKU_API_KEY - 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
        "here is my heroku api key - 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
        "- client_secret - 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
    ]);
}

/// Six or seven characters that are one count end to end are filler, as a longer count is; a
/// short value that only starts like one, or counts in two parts, is typed as a password.
#[test]
fn a_short_value_that_is_one_count_is_filler() {
    assert_clean(&[
        "\"password\": \"abcdefg\"",
        "db_secret = '7654321'",
        "token: \"uvwxyz\"",
    ]);
    assert_found(&[
        "\"password\": \"abcdfeg\"",
        "db_password = 'abc123'",
        "password = \"uvwxy9\"",
    ]);
}

/// Two characters in turn making most of a value are typed filler, as one character repeated
/// is; a unit of three or more repeated, or a short alternation inside a random value, is not.
#[test]
fn two_characters_in_turn_making_most_of_a_value_are_filler() {
    assert_clean(&[
        "deploy_key = \"7F2B-3C3C-3C3C-3C3C-3C3C3C3C\"",
        "\"client_secret\": \"k4545454545\"",
    ]);
    assert_found(&[
        "auth_token = \"Zx9Zx9Zx9Zx9Lm2Q\"",
        "\"client_secret\": \"Qm7xL2vR9kT4wZ8nB3cY6pD1abab\"",
    ]);
}

/// A host's name built around its IPv4 address names the host, under any key; a generated value
/// beside an address is a secret.
#[test]
fn a_hosts_name_around_its_address_is_no_secret() {
    assert_clean(&[
        "\"shard_key\": \"db-192.168.40.12-primary\"",
        "routing_key = 'edge.10.8.0.1.west'",
    ]);
    assert_found(&[
        "\"shard_key\": \"Qm7xL2vR9kT4wZ8n-192.168.40.12\"",
        "api_secret = 'edge-10.8.0.1-Zt4Lq9Wx2Rm7Kp3N'",
    ]);
}

#[test]
fn word_lists_index_every_word_exactly() {
    let split =
        |w: &Words| -> Vec<&[u8]> { w.text.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect() };
    for list in [
        &QUALIFIERS,
        &PREFIX_QUALIFIERS,
        &POSITION_QUALIFIERS,
        &NO_WORDS,
        &words_of!(b"  a bb  ccc "),
    ] {
        assert_eq!(list.iter().collect::<Vec<_>>(), split(list));
    }
    assert_eq!(words_of!(b"  a bb  ccc ").iter().count(), 3);
}

#[test]
fn rule_names_are_snake_case() {
    for (kind, name) in [
        (SecretKind::PrivateKey, "private_key"),
        (SecretKind::Assignment, "assignment"),
        (SecretKind::CommandLine, "command_line"),
        (SecretKind::AuthHeader, "auth_header"),
        (SecretKind::UrlCredentials, "url_credentials"),
        (SecretKind::CredentialFile, "credential_file"),
        (SecretKind::PasswordHash, "password_hash"),
        (SecretKind::Vendor("stripe_key"), "stripe_key"),
        (SecretKind::Jwt, "jwt"),
        (SecretKind::Prose, "prose"),
    ] {
        assert_eq!(kind.as_str(), name);
    }
    for v in &super::VENDORS {
        assert!(
            v.name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{}",
            v.name()
        );
    }
}

#[test]
fn pem_blocks_are_private_keys_whole() {
    let block =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\nab+/cd==\n-----END RSA PRIVATE KEY-----";
    let text = format!("key:\n{block}\nthanks");
    assert_eq!(spans(&text), [block]);
    assert_kind(
        SecretKind::PrivateKey,
        &[
            "-----BEGIN PRIVATE KEY-----",
            "-----begin openssh private key-----",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY----- then password = x",
        ],
    );
}

#[test]
fn pem_bodies_without_armor_are_private_keys_but_certificates_are_not() {
    let line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj";
    assert_kind(SecretKind::PrivateKey, &[&format!("{line}\n{line}\n{line}")]);
    let cert = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ";
    assert_clean(&[
        &format!("{cert}\n{cert}"),
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "-----BEGIN PRIVATE KEY----",
        line,
    ]);
}

#[test]
fn keys_containing_a_secret_word_match_with_any_affix_case_and_separator() {
    assert_kind(
        SecretKind::Assignment,
        &[
            "password = hunter2",
            r#"{"api_key": "abc9"}"#,
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEY",
            "DB_PASSWORD=s3cr3t docker compose up",
            "PGPASSWORD=pw4d psql",
            "mysqlRootPassword: 'Qz9!xw'",
            "spring.datasource.password=Zq7kLm2p",
            "client-secret: q8Zk!2",
            "Secret_Key = 'v4lue'",
            "passphrase = \"correct horse battery staple\"",
            "cookie: session=abc123",
            "app.config['SECRET_KEY'] = 'k3yv4l'",
            "set GITHUB_TOKEN=t0kenv4lue",
            "mypassword = hunter2",
            "<password>Hq8vN2pLxQ7</password>",
            "password:Hq8vN2pLxQ7",
        ],
    );
}

#[test]
fn the_value_is_the_span_not_the_key() {
    assert_eq!(spans("DB_PASSWORD=s3cr3t docker compose up"), ["s3cr3t"]);
    assert_eq!(spans(r#"{"token": "abc9xyz", "n": 1}"#), ["abc9xyz"]);
    assert_eq!(spans("Password=hunter2;Encrypt=true"), ["hunter2"]);
    assert_eq!(spans("https://ci/x?token=Zk3n8QwL2x&page=2"), ["Zk3n8QwL2x"]);
}

#[test]
fn metadata_keys_types_code_and_placeholders_are_not_secrets() {
    assert_clean(&[
        "password: String",
        "api_key: Option<String>",
        "token: string",
        "token?: string",
        "fn f(password: &str)",
        "let token = lexer.next_token();",
        "Client(api_key=os.environ[\"KEY\"])",
        "Client(api_key=api_key)",
        "const token = process.env.TOKEN;",
        "use crate::token::Token;",
        "if token == expected { ok }",
        "token_count = 3",
        "max_tokens: 4096",
        "tokenizer: bpe",
        "password_file = /run/secrets/db",
        "password = None",
        "password: ${DB_PASSWORD}",
        "password: {{ .Values.db.password }}",
        "password = \"****\"",
        "api_key = \"xxxxxxxxxxxxxxxx\"",
        "SECRET_KEY=changeme",
        "set DB_PASSWORD=%DB_PASSWORD%",
        "password: !vault |",
        "password = [REDACTED:assignment]",
        "password: \"Password must be at least 8 characters\"",
        "PWD=/home/dev/project",
        "password=password",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db",
        "the session cookie SameSite=Strict and Secure",
        "<password></password>",
    ]);
}

#[test]
fn prose_needs_a_random_looking_word_after_the_secret_word() {
    assert_kind(
        SecretKind::Prose,
        &[
            "my password is hunter2",
            "the api key is 4693954bdee012a93791",
            "the db password for staging: KmNk7wV5",
            // The scope's first word ends at a `-` (`on-prem`), not only at a blank.
            "the password on-prem is Xy7!kq9Lm",
            "the password for prod-eu is Xy7!kq9Lm",
            "das Passwort für prod ist Xy7!kq9Lm",
        ],
    );
    assert_clean(&[
        "the token is here",
        "Use the token bucket algorithm",
        "password reset flow",
        "the api key rotation doc",
        "Is the token base64url-encoded or hex?",
        "Use sha256 for the token hash",
        "a secret, kept",
    ]);
}

#[test]
fn command_line_credentials() {
    assert_kind(
        SecretKind::CommandLine,
        &[
            "mysqldump --password=Zq7kLm2p shop",
            "docker login -u bot -p Zq7kLm2p registry",
            "sshpass -p 'Zq7kLm2p' ssh host",
            "mysql -u root -pZq7kLm2p",
            "redis-cli -a Zq7kLm2p ping",
            "curl -u admin:Zq7kLm2p https://ci",
            "curl --user admin:Zq7kLm2p https://ci",
        ],
    );
    assert_eq!(spans("curl -u admin:Zq7kLm2p https://ci"), ["Zq7kLm2p"]);
    assert_clean(&[
        "mysql -u root -p shop",
        "psql -h db -p 5432",
        "docker login --password-stdin",
        "curl -u \"$USER:$PASS\" https://ci",
        "tar -p -x file",
    ]);
}

#[test]
fn auth_headers() {
    assert_kind(
        SecretKind::AuthHeader,
        &[
            "Authorization: Bearer k7Qz2mWp12345",
            "Authorization: Basic dXNlcjpwYXNz",
            "X-Api-Key: 3f9a8b7c6d5e",
            "send it with Bearer k7Qz2mWp12345 please",
            "curl -H 'Basic dXNlcjpwYXNz'",
        ],
    );
    assert_clean(&[
        "Bearer <your-token>",
        "Authorization: Bearer $TOKEN",
        "bearer of bad news",
        "Use Bearer authentication everywhere",
        "Basic authentication is off",
        "pall-bearer k7Qz2mWp12345",
        "Bearerk7Qz2mWp12345",
    ]);
}

#[test]
fn a_scheme_word_in_a_sentence_is_no_authorization_header() {
    // `secret key used`: the secret word's value would be `key`, a scheme word of headers,
    // and the word after it the token; in prose it is just the next word.
    assert_clean(&[
        "# SECURITY WARNING: keep the secret key used in production secret!",
        "the secret key stored in vault is rotated weekly",
        "which secret key rotated last night?",
        "the api token used by the worker",
    ]);
    assert_kind(
        SecretKind::AuthHeader,
        &[
            "Authorization: Key k7Qz2mWp12345xq",
            "x-api-key: Key k7Qz2mWp12345xq",
            "\"Authorization\": \"Key k7Qz2mWp12345xq\"",
        ],
    );
}

#[test]
fn references_in_the_password_slot_are_not_passwords() {
    // Ruby interpolation and release pipelines' token slots; a variable escaped for the
    // shell that expands it later; GitHub's fixed word where the password goes.
    assert_clean(&[
        "mongodb://user:#{db-password}@localhost/db",
        "CONNECTION_STRING=mongodb://user:#{azure-replacement-token}#@mongo.local:27017/db",
        "password: \"#{DbPassword}#\"",
        "echo mongo --host localhost --username root --password \\$PASSWORD",
        "echo mysql -u user -h127.0.0.1 \"--password=\\$ENVVAR\"",
        "git clone https://$GITHUB_TOKEN:x-oauth-basic@github.com/acme/repo.git",
    ]);
    // A password's own characters around a slot, an escaped-looking literal, and the token
    // in the user's place are still secrets.
    assert_kind(
        SecretKind::UrlCredentials,
        &[
            "mongodb://user:#{x}Kq9mZ2pLw@localhost/db",
            "git clone https://3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a:x-oauth-basic@github.com/a/r.git",
        ],
    );
    assert!(!findings("password=\\$uP3r-S3cret!9").is_empty());
    assert!(!findings("password=ab#{cd}ef9Xz2").is_empty());
}

#[test]
fn code_that_fetches_a_secret_and_words_that_stand_in_for_one_are_not_secrets() {
    assert_clean(&[
        "c.S3SecretAccessKey = c.Get(\"UPLOAD_SECRET_ACCESS_KEY\", \"\", \"An AWS key\")",
        "PG_PASSWORD=get_setting('PG_PASSWORD')",
        "pass    = CGI.escape(\"#{$env.db_password}\").gsub('+', '%20')",
        "  pwd=instance_info.password,",
        "db_pass = settings.database.db_password;",
        "MYSQL_PASSWORD=CHANGE_THIS_STRONG_PASSWORD_ADMIN",
        "DATABASE_URL=\"mysql://app:!ChangeMe!@127.0.0.1:3306/app\"",
        "SqlSettingsDefaultDataSource = \"mysql://mmuser:obfuscated@localhost/test\"",
        "password: removed",
    ]);
    // A literal with a parenthesis, dots or marks around it is still a password.
    assert_found(&[
        "DB_PASSWORD=Abc(d3f)Gh9x",
        "password = \"kX9(\\\"mQ2zLp\"",
        "password: my.secret.value9",
        "DB_PASSWORD=!Xk9mQ2zLp!",
        "DB_PASSWORD=SuperStrongRandomPassword",
    ]);
}

#[test]
fn a_providers_value_in_a_name_value_pair_is_found() {
    assert_kind(
        SecretKind::Vendor("sonarqube_token"),
        &[
            "params:\n- name: SONAR_LOGIN\n  value: 9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e",
            "<property name=\"sonar.login\" value=\"9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e\" />",
        ],
    );
    assert_clean(&[
        "params:\n- name: SONAR_PROJECT_KEY\n  value: my_project_key",
        "- name: SONAR_HOST_URL\n  value: https://sonar.example.com",
        "<property name=\"sonar.projectVersion\" value=\"9acf34ff\" />",
    ]);
}

#[test]
fn a_connection_string_value_ends_before_the_next_field_even_one_with_spaces() {
    for (text, value) in [
        (
            "Server=db;User ID=sa;Password=YourStr0ng@Pass;Initial Catalog=Ports;",
            "YourStr0ng@Pass",
        ),
        (
            "user id=app;password=3GGb62XfnnlbKpHr;Max Pool Size=100",
            "3GGb62XfnnlbKpHr",
        ),
        // A connection string's field is its text: a word there is the password.
        (
            "Provider=SQLOLEDB.1;User ID=bill; Password =specialbill_user;Initial Catalog=Bills;",
            "specialbill_user",
        ),
        // No field follows: the `;` is the password's own.
        ("Password=Xk9;mQ2zLp", "Xk9;mQ2zLp"),
    ] {
        let found: Vec<&str> = findings(text).iter().map(|f| &text[f.start..f.end]).collect();
        assert_eq!(found, [value], "{text}");
    }
}

#[test]
fn key_ids_log_fields_and_generic_paths_are_not_secrets() {
    assert_clean(&[
        "gpg: Signature made Mon 01 Jan 2026, using RSA key 4AEE18F83AFDEB23 Good signature",
        "signed with the GPG key 3AA5C34371567BD2",
        "INFO auth: user=alice token_type=Bearer expires_in=3600 scope=\"read write\"",
        "let key = Key::<Aes256Gcm>::from_slice(&key_bytes); let cipher = Aes256Gcm::new(key);",
    ]);
    // The same hex run as an API key, and a token after the scheme, are still secrets.
    assert!(!findings("my api key 4aee18f83afdeb23").is_empty());
    assert_kind(
        SecretKind::AuthHeader,
        &["Authorization: Bearer k7Qz2mWp12345xq=="],
    );
}

#[test]
fn vendor_shapes_have_prefix_alphabet_and_length() {
    let cases = [
        ("sk-proj-k7Qz2mWp1234", "openai_style_key"),
        ("ghp_k7Qz2mWp1234", "github_token"),
        ("xoxb-12345678-abcD3fgh", "slack_token"),
        ("AKIAQ3EGRUPXZ7N4K2WB", "aws_access_key"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
        ("AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "google_api_key"),
        ("glpat-Zk3n8QwL2xVb7Rt5Yp1M", "gitlab_token"),
        ("npm_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2Ku", "npm_token"),
        (
            "dop_v1_7f3a9c1e5b2d80647f3a9c1e5b2d80647f3a9c1e5b2d80647f3a9c1e5b2d8064",
            "digitalocean_token",
        ),
        ("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", "shopify_token"),
    ];
    for (token, name) in cases {
        assert_eq!(
            find_secret(&format!("use {token} now")),
            Some(SecretKind::Vendor(name)),
            "{token}"
        );
    }
    assert_clean(&[
        "risk-based task-list on the desk-top",
        "sk-short",
        "ghp_abcdefg",
        "ghp_k7Qz2mWp1234-more",
        "my_ghp_k7Qz2mWp1234",
        "AKIAIOSFODNN7EXAMPLE",
        "AKIAQ3EGRUPXZ7N4K2W",
        "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        "npm_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2K",
        "中sk-abc",
        "sk-abc中defgh",
    ]);
}

/// Non-ASCII text and URL-encoding are word boundaries for a token: a token glued to a
/// Chinese or Japanese sentence, or to `%3D`, is still found and redacted whole.
#[test]
fn tokens_glued_to_non_ascii_or_url_encoded_text_are_found() {
    let token = "ghp_pP2BpvLpyOcHYJZtrEXTEDadQyDoMNlXM1EJ";
    for text in [
        format!("这是我的令牌{token}请帮我检查"),
        format!("APIキーは{token}です"),
        format!("clé{token}"),
        format!("/cb?next=%2Fhome%3Ftoken%3D{token}%26x%3D1"),
        format!("q=hello%20{token}"),
    ] {
        assert_eq!(spans(&text), [token], "{text}");
    }
    assert_eq!(spans(&format!("令牌{JWT}。")), [JWT]);
    assert_clean(&["中文Bearer k7Qz2mWp12345", "100%ABCDEF done"]);
}

/// A value longer than [`crate::judge::MAX_VALUE`] is judged on its head and redacted whole.
#[test]
fn long_values_are_redacted_to_their_end() {
    let long: String = "Zk3n8QwL2xVb7Rt5Yp1M+/".repeat(60);
    for (text, secret) in [
        (format!("{{\"token\": \"{long}\"}}"), long.as_str()),
        (format!("export AWS_SESSION_TOKEN={long} next"), long.as_str()),
        (format!("Authorization: Bearer {long}"), long.as_str()),
        (format!("curl -H 'x' Bearer {long} x"), long.as_str()),
        (format!("client-key-data: {long}\nnext: 1"), long.as_str()),
    ] {
        assert_eq!(spans(&text), [secret], "{}", &text[..40]);
    }
    // Past the cap, everything up to it goes.
    let huge = "Zk3n8QwL2xVb7Rt5".repeat(5000);
    let text = format!("token=\"{huge}");
    assert_eq!(findings(&text)[0].end, "token=\"".len() + crate::judge::MAX_SPAN);
}

/// Long JWT segments (ID tokens with kilobytes of claims, RS512 signatures) are whole.
/// A table cell and a line fed to `chpasswd` are values too: judged on their first
/// [`crate::judge::MAX_VALUE`] bytes like any other, what follows does not change the verdict.
#[test]
fn long_cells_and_here_document_lines_are_judged_on_their_head() {
    let long = format!("{}...", "Zq8!pLm2xQ".repeat(60));
    for text in [
        format!("password={long}"),
        format!("user,password\nbob,{long}"),
        format!("| user | password |\n|---|---|\n| bob | {long} |"),
        format!("chpasswd <<EOF\nbob:{long}\nEOF"),
    ] {
        assert_eq!(spans(&text), [long.as_str()], "{}", &text[..40]);
    }
}

#[test]
fn jwts_with_long_segments_are_found_whole() {
    let payload = format!("eyJ{}", "aXNzIjoiaHR0cHM6Ly9zZWN1cmV0b2tlbi".repeat(40));
    let jwt = format!(
        "eyJhbGciOiJSUzUxMiJ9.{payload}.{}",
        "Sfl-Kxw_RJSMeKKF2QT4fwpMeJf36P".repeat(23)
    );
    assert_eq!(spans(&format!("id_token {jwt} ok")), [jwt.as_str()]);
}

#[test]
fn url_userinfo_runs_to_the_last_at_and_over_a_slash_in_a_password() {
    assert_eq!(
        spans("postgresql://admin:P@ssw0rd123@db.prod:5432/app"),
        ["P@ssw0rd123"]
    );
    assert_eq!(
        spans("redis://default:ab/Cd9+xYz12=@redis.internal:6379"),
        ["ab/Cd9+xYz12="]
    );
    assert_eq!(spans("mysql://root:SUPERSECRETPASS@db/app"), ["SUPERSECRETPASS"]);
    assert_eq!(
        spans("https://fa6eb9eb2b67d8b081abd1d97aaf35f3b68f14ad@github.com/org/repo"),
        ["fa6eb9eb2b67d8b081abd1d97aaf35f3b68f14ad"]
    );
    assert_clean(&[
        "mysql://root:DB_PASS@db/app",
        "mysql://root:YOURPASSWORD@db/app",
        "https://host:8080/a@b",
        "ssh://git@github.com:22/org/repo",
        "https://deploy-bot@github.com/org/repo",
    ]);
}

/// Redaction covers what made the finding: a token wrapped onto the next line, and an AWS
/// secret access key next to its key id.
#[test]
fn wrapped_tokens_and_aws_secrets_near_their_id_are_redacted() {
    let (text, _) = redact("ghp_zymMlopiWfqUyHRS\nIf8NFmAUNLnY5Yx0y3Rn\nthanks");
    assert_eq!(text, "[REDACTED:github_token]\nthanks");
    let (text, _) = redact("ghp_zymMlopiWfqUyHRSIf8NFmAUNLnY5Yx0y3Rn\nThanks, bye");
    assert_eq!(text, "[REDACTED:github_token]\nThanks, bye");
    let (text, _) = redact(
        "aws_access_key_id = AKIAQ3EGRUPXZ7N4K2WB\naws_secret_access_key: kNtaU4i5GpIpatEJc2vPj/eJeRvtQRxFAoCRIsBh",
    );
    assert!(!text.contains("kNtaU4i5"), "{text}");
    let (text, _) = redact("AKIAQ3EGRUPXZ7N4K2WB\nkNtaU4i5GpIpatEJc2vPj+eJeRvtQRxFAoCRIsBh");
    assert!(!text.contains("kNtaU4i5"), "{text}");
}

#[test]
fn jwts_and_url_credentials() {
    assert_kind(SecretKind::Jwt, &[JWT]);
    assert_kind(
        SecretKind::UrlCredentials,
        &[
            "https://bob:s3cret@example.com/x",
            "redis://:Zk3n8QwL@cache:6379",
            "连接 https://bob:密码密码@例子.com 吧",
        ],
    );
    assert_eq!(spans("postgres://app:Zk3n8QwL@db/prod"), ["Zk3n8QwL"]);
    assert_clean(&[
        "postgres://USER:PASSWORD@HOST:5432/DB",
        "https://user:${PASS}@host",
        "git@github.com:org/repo.git",
        "https://example.com/a@b",
        r#"{"url":"http://host:8000","owner":"a@b.c"}"#,
    ]);
}

#[test]
fn credential_files() {
    assert_kind(
        SecretKind::CredentialFile,
        &[
            "machine api.example.com login me password Zq7kLm2p",
            "db.internal:5432:prod:app:Zq7kLm2p",
        ],
    );
    assert_clean(&[
        "host:port:database:username:password is the format",
        "12:30:00 on 2024-01-05",
    ]);
}

#[test]
fn redaction_replaces_each_span_with_its_rule() {
    let (text, top) = redact("DB_PASSWORD=s3cr3t and ghp_k7Qz2mWp1234 done");
    assert_eq!(
        text,
        "DB_PASSWORD=[REDACTED:assignment] and [REDACTED:github_token] done"
    );
    assert_eq!(top, Some(SecretKind::Assignment));
    let (text, top) = redact("nothing here");
    assert!(matches!(text, std::borrow::Cow::Borrowed("nothing here")));
    assert_eq!(top, None);
}

#[test]
fn private_blocks_are_stripped_unclosed_ones_to_the_end() {
    assert_eq!(
        strip_private("a<private>b</private>c<PRIVATE>d</Private>e"),
        "ace"
    );
    assert_eq!(strip_private("keep <private>drop all of this"), "keep ");
    assert_eq!(
        strip_private("no tags </private> here"),
        "no tags </private> here"
    );
}

/// One of each kind of finding, for the panic tests below.
const SCAN_SAMPLES: [&str; 35] = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\n-----END RSA PRIVATE KEY-----",
    "\"client secret\" :\u{3000}\"v4lue9\"",
    "Bearer k7Qz2mWp.ijk9",
    "github_pat_k7Qz2mWp1234",
    "AKIAQ3EGRUPXZ7N4K2WB",
    JWT,
    "postgres://u:pw9@db:5432/x",
    "curl -u a:b9cdef https://x",
    "db:5432:p:u:Zq7kLm2p",
    "k7Qz2mWpijklmn.atlasv1.x",
    "abc8Q~xyz",
    "password=Zq8!pLm2x",
    "密码是Zq8!pLm2x",
    "user,password\nbob,Zq8!pLm2x",
    "echo 'bob:Zq8!pLm2x' | chpasswd",
    "htpasswd -b f bob Zq8!pLm2x",
    "keytool -list -storepass Zq8!pLm2x",
    "net use Z: \\\\s\\x Zq8!pLm2x /user:bob",
    "pbkdf2_sha256$1$ab$ROJmJLOC3sZjQbCoA8HuEry+yDc=",
    "{SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
    "{crypt}7fg8LEGAKRwpC",
    "new NetworkCredential(\"a\", \"Zq8!pLm2x\".toCharArray())",
    "keyring.set_password(\"s\", \"u\", \"Zq8!pLm2x\")",
    "비밀번호는 Zq8!pLm2x입니다",
    "DB_KENNWORT_PROD=Zq8!pLm2x",
    "db_contraseña=Zq8!pLm2x",
    "mot de passe\u{202f}: Zq8!pLm2x",
    "mot de passe\u{a0}:\u{202f}Zq8!pLm2x",
    "userPassword:: e1NTSEF9TGZ2OEhp\n blovRlN3aGYvd1FF",
    "keytool -list \\\r\n -storepass Zq8!pLm2x `\n -v",
    "NET USE Z: \\\\s\\x Zq8!pLm2x",
    "비밀번호는 Zq8!pLm2x으로",
    "パスワードはZq8!pLm2xです",
    "Пароль_БД=Zq8!pLm2x",
    "비밀번호_확인: Zq8!pLm2x",
];

#[test]
fn every_prefix_of_every_sample_is_scanned_without_panicking() {
    for sample in SCAN_SAMPLES {
        for (cut, _) in sample.char_indices() {
            for tail in ["", "é", "🎉", "密", "\n"] {
                let _ = redact(&format!("{}{tail}", &sample[..cut]));
                let _ = redact(&format!("{tail}{}", &sample[cut..]));
            }
            let _ = redact(&format!("{}密{}", &sample[..cut], &sample[cut..]));
        }
    }
}

/// A rule that cuts a run at a byte count must not cut a character: `redact` slices the
/// text at every finding's ends.
#[test]
fn findings_never_split_a_character() {
    let cjk = "这是一个没有空格的很长的中文句子".repeat(12);
    let long = [
        format!("chpasswd <<< 'bob:{cjk}'"),
        format!("chpasswd <<E\nbob:{cjk}\nE"),
        format!("password=\"Zq8!{cjk}\""),
        format!("password=Zq8!{cjk}"),
        format!("<password>Zq8!{cjk}</password>"),
        format!("token=\"Zq8!{}", "é".repeat(40_000)),
        format!("token=Zq8!{}", "🎉".repeat(20_000)),
        format!("비밀번호: Zq8!{}", "비밀번호".repeat(200)),
        format!("db_contraseña=Zq8!{cjk}"),
    ];
    let glue = ["", "é", "🎉", "密码", "e\u{301}", "👩‍💻", "\n"];
    for sample in SCAN_SAMPLES
        .iter()
        .copied()
        .chain(long.iter().map(String::as_str))
    {
        for before in glue {
            for after in glue {
                let _ = redact(&format!("{before}{sample}{after}"));
                let _ = redact(&format!("{before} {sample} {after}"));
            }
        }
    }
}

#[test]
fn a_200000_character_prompt_without_secrets_is_clean() {
    let paragraph = "Refactor the risk-based task-list 中文 🎉 so the token bucket keeps \
            password reset flow working; let token = lexer.next_token(); password: String, \
            see https://example.com/a@b and git@github.com:o/r.git. ";
    let mut prompt = String::new();
    while prompt.chars().count() < 200_000 {
        prompt.push_str(paragraph);
    }
    assert_eq!(find_secret(&prompt), None);
    prompt.push_str(" password=hunter2");
    assert_eq!(find_secret(&prompt), Some(SecretKind::Assignment));
}

/// The shortcut that rules out a provider's value after a key agrees with reading the
/// operand and the value byte by byte, on every mix of value bytes, blanks, `!`, operators,
/// quotes, control and non-ASCII bytes.
#[test]
fn a_keyword_value_is_ruled_out_only_where_none_follows() {
    let by_bytes = |bytes: &[u8], kend: usize| {
        let r = crate::bytes::run_end_max(bytes, kend, 64, |b| b" \t\n\r\"'`=:>?,.|!<-".contains(&b));
        r - kend == 64
            || crate::bytes::run_end_max(bytes, r, 16, |b| crate::words::KEYWORD_TOKEN[usize::from(b)]) - kend
                >= 16
    };
    let alphabet = b"aZ9 =!\"-.|\t\n\x01:+/_~\xc3";
    let mut seed = 0x9e37_79b9_u32;
    for _ in 0..200_000 {
        let len = 10 + (seed % 30) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                // Mostly value bytes, so that some values reach 16.
                if seed.is_multiple_of(3) {
                    alphabet[(seed / 3) as usize % alphabet.len()]
                } else {
                    b'k'
                }
            })
            .collect();
        for kend in 0..bytes.len() {
            assert_eq!(
                crate::scan::keyword_value_may_follow(&bytes, kend),
                by_bytes(&bytes, kend),
                "{:?} at {kend}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

/// The pass for tokens on a line about a key, reading only the words the scan listed, finds
/// what reading every byte finds, on every prompt of the corpora and on those prompts run
/// together.
#[test]
fn the_listed_name_words_find_what_reading_every_byte_finds() {
    let corpus = include_str!("../../../tests/fixtures/secrets_corpus.txt");
    let heldout = include_str!("../../../tests/fixtures/secrets_heldout.txt");
    let prompts: Vec<String> = corpus
        .lines()
        .chain(heldout.lines())
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(" | "))
        .map(|(_, text)| text.replace("\\n", "\n"))
        .collect();
    let joined = prompts.join(" ");
    let (mut listed, mut found_by_pass) = (0, 0);
    for text in prompts.iter().chain([&joined]) {
        let mut scan = crate::scan::Scan::new(text);
        scan.run();
        if !scan.names_listed {
            continue;
        }
        let mut found = scan.found;
        found.sort_by_key(|f| (f.start, f.kind.rank()));
        let mut every_byte = found.clone();
        let by_list = crate::scan::same_line_tokens(text.as_bytes(), &mut found, Some(&scan.name_words));
        let by_bytes = crate::scan::same_line_tokens(text.as_bytes(), &mut every_byte, None);
        assert_eq!((by_list, &found), (by_bytes, &every_byte), "{text:?}");
        listed += 1;
        found_by_pass += usize::from(by_list);
    }
    assert!(
        listed > 500 && found_by_pass >= 5,
        "{listed} listed, {found_by_pass} found"
    );
}

/// What is read back to a line's start (whether an entry's title opens it, a key's indent, a JSON
/// Web Key member's column) is read so after a long line of repeated keys too: the title behind a
/// banner's marks is an entry's, a key's identifier is not, and a template parameter's default and
/// a JSON Web Key's private member after such a line are found.
#[test]
fn line_starts_read_after_a_long_line_of_keys_as_after_a_short_one() {
    let uuid = "8c4f1a2e-9b7d-4e3a-a1f6-2d5c8b9e0f14";
    let banner = "/".repeat(3000);
    let prose = "api-key - ".repeat(600);
    let blocks = "key:{".repeat(3000);
    let ktys = "kty:".repeat(3000);
    let member = "w7OfRx8bMeQsNf4nu5X70CqoCj_19aZroSUXKy7jUJ3";
    assert_spans(&[
        (&format!("{banner} RELEASE_TOKEN - {uuid}"), uuid),
        (&format!("{prose}Release token - {uuid}"), uuid),
        (
            &format!("{blocks}key: {{\"Type\": \"String\", \"Default\": \"Qx7vLm2pZ9rT4wKs\"}}"),
            "Qx7vLm2pZ9rT4wKs",
        ),
        (
            &format!("{ktys}\n- kty: EC\n  crv: P-256\n  d: '{member}'"),
            member,
        ),
    ]);
    assert_clean(&[
        &format!("{banner} Release token - {uuid}"),
        &format!("{blocks}key: {{\"Type\": \"String\", \"Default\": \"changeme\"}}"),
        &format!("{ktys}\n- kty: EC\n  crv: P-256\n  x: '{member}'"),
    ]);
}

/// A table's header and rows, and an `.npmrc` scope's `_auth`, below a long line of keys read as
/// they do alone (each key's line start and end are remembered, not read again per key): a
/// generated value in a password column or `_auth` is found, a stand-in there is not.
#[test]
fn tables_and_scoped_auth_below_a_long_line_of_keys_read_as_alone() {
    let keys = "key: 1, ".repeat(2000);
    assert_spans(&[
        (
            &format!("{keys}\nuser,password\nops,Zq8pLm2xQ7vK\n"),
            "Zq8pLm2xQ7vK",
        ),
        (
            &format!("{keys}\n| user | password |\n| --- | --- |\n| ops | Zq8pLm2xQ7vK |"),
            "Zq8pLm2xQ7vK",
        ),
        (
            &format!("{keys}\n//registry.example.org/:_auth=b3BzOlpxOHBMbTJ4UTd2Sw==\n"),
            "b3BzOlpxOHBMbTJ4UTd2Sw==",
        ),
    ]);
    assert_clean(&[
        &format!("{keys}\nuser,password\nops,changeme\n"),
        &format!("{keys}\n| user | password |\n| --- | --- |\n| ops | ******** |"),
        &format!("{keys}\n//registry.example.org/:_auth=changeme\n"),
    ]);
}

/// A name/value pair written value first, on the long line of keys it ends or below it, names
/// its value as it does alone: a password's name makes the value before it a secret, a host's
/// does not.
#[test]
fn a_value_before_its_name_after_a_long_line_of_keys_is_read_as_alone() {
    let keys = "key: 1, ".repeat(2000);
    assert_spans(&[
        (
            &format!("{keys}{{\"value\": \"Zq8pLm2xQ7vK\", \"name\": \"DB_PASSWORD\"}}"),
            "Zq8pLm2xQ7vK",
        ),
        (
            &format!("{keys}\nenv:\n  - value: Zq8pLm2xQ7vK\n    name: DB_PASSWORD"),
            "Zq8pLm2xQ7vK",
        ),
    ]);
    assert_clean(&[
        &format!("{keys}{{\"value\": \"Zq8pLm2xQ7vK\", \"name\": \"DB_HOST\"}}"),
        &format!("{keys}\nenv:\n  - value: Zq8pLm2xQ7vK\n    name: DB_USER"),
    ]);
}

/// Each unit repeated with nothing between scans in linear time (see [`assert_units_linear`]).
#[test]
fn adversarial_repetitions_scan_in_linear_time() {
    let units = [
        "bearer ",
        "bearer a.",
        "-----BEGIN ",
        "-----END ",
        "a://",
        "://a:",
        "sk-",
        "eyJ.",
        "eyJ-",
        "eyJaaaaaaaaaa.",
        "令牌eyJaaaaaaaaaa.eyJaaaaaaaaaa.",
        "%3D",
        "://a:b/",
        "token ",
        "token=",
        "password ",
        "AKIA",
        "xoxb-",
        "-",
        "密",
        "\n",
        "a:",
        "-p ",
        "MIIEowIBAAKCAQEAq7Bz\n",
        "~",
        "Q~",
        ".atlasv1.",
        "key",
        "<private>",
        "token=\"",
        "AKIAQ3EGRUPXZ7N4K2WB ",
        "identified by ",
        "----BEGIN RSA PRIVATE KEY----\n",
        "---- END SSH2 PRIVATE KEY ----\n",
        "Private-Lines: 1\n",
        "12345678:AA",
        "MTAJMlA4JahKDNl9sW7W6zCJ.",
        "&sig=",
        "ghp_zymMlopiWfqUyHRS\n",
        "密码",
        "密码是",
        "密码是AES-256-SHA-256-RSA-2048-",
        "パスワード：",
        "mot de passe ",
        "Passwort ist ",
        "пароль ",
        "user,password\n",
        "a,Zq8!pLm2x\n",
        "password,password,password,password,password,password,password,password\n",
        "| password | x |\n",
        "insert into t (a, password) values ('x', ",
        "insert into t (password) values ('Zq8!pLm2x'),",
        "login(",
        "auth=(\"a\", ",
        "HTTPBasicAuth(\"a\", \"Zq8!pLm2x\"",
        "htpasswd -b ",
        "Run htpasswd -b a b c d ",
        "openssl x ; curl -k y ",
        "ssh-keygen | -N ",
        "wpa_passphrase a ",
        "net user a ",
        "chpasswd ",
        "chpasswd <<E\n",
        "bob:Zq8pLm2xQ\n",
        "chpasswd <<E\nb:Zq8pLm2xQ",
        "|password|\n|Zq8pLm2xQ",
        "openssl -passin pass:",
        "ssh-keygen -N ",
        "$",
        "$6$",
        "$2b$12$",
        "$argon2id$v=19$m=1,t=1,p=1$",
        "root:x:1:0:0:0:0:0:\n",
        "bot12345678:AA",
        "rnd_",
        "A_PAT=",
        "tls:\n  secret: tls-cert-2024\n",
        "  secret: a-b-c-d ",
        "é\n",
        "user,password\nÉ,Zq8!pLm2x\n",
        "keytool -storepass ",
        "-storepass ",
        "keytool -keypass a -storepass ",
        "net use ",
        "net use \\\\a\\b ",
        "net use Z: \\\\a\\b /user:x ",
        "{SSHA}",
        "{SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f ",
        "{CRYPT}$6$",
        "pbkdf2:sha256:1$",
        "pbkdf2_sha256$1$ab$",
        "bcrypt_sha256$$2b$12$",
        "NetworkCredential(\"a\", ",
        "set_password(\"a\", \"b\", ",
        "\"x\".toCharArray(), ",
        "비밀번호",
        "비밀번호는 ",
        "비밀번호: ",
        "DB_KENNWORT=",
        "a_kennwort_",
        "_wachtwoord",
        "db_contraseña",
        "CONTRASEÑA ",
        "mot de passe\u{a0}: ",
        "keytool \\\n",
        "-storepass a \\\n",
        "userPassword:: ",
        "userPassword:: e1NTSEF9\n ",
        "NET USE ",
        "NET USE Z: \\\\a\\b ",
        "비밀번호_",
        "Пароль_БД",
        "비밀번호는 A으",
        "password:\u{a0}",
        "sha1$a$",
        "{SSHA}ThisIsNotAHashJustSomeLongerText",
        "10.0.0.1 (a/",
        "10.0.0.1(ops/Xk9mQ2zLp7,",
        "tokens:Wq7#Lm2$Zx9 ",
        "DB_TOKEN=121-121-121-",
        "k = '''Xk9mQ2zLp7\n",
        "SECRET = getenv(\"A\", ",
        "7affd6683c03c241a167da374696712e-",
        // A key whose value runs on into the next key's (a value cut at its head was read on to
        // its end for a JWT's marker).
        "PAT=",
        "key=",
        "密码=",
        "PAT=eyJa.",
        // A name field naming a secret, its value looked for before it (its line was read back
        // to its start).
        "\"name\": \"DB_PASSWORD\", ",
        "Name: api_key ",
        "key: token ",
        // A user and a password running on (read to its end before it was judged).
        "10.0.0.1(a/",
        "ID/PW(a/",
        // Keys on one long line that each read it back to its start: a spaced dash after a key
        // (is the key an entry's title?), a key opening a block (its indent), a JSON Web Key's
        // `kty:` (its column).
        "api-key - ",
        "key:{",
        "kty:",
    ];
    assert_units_linear(&units);
}

/// The sizes the linear-time tests compare, and the most one scan of the larger may cost over
/// [`RUNS`] scans of the smaller, which read as many bytes: about as much when linear, [`RUNS`]
/// times as much when quadratic. The limit sits between: a linear scan measured up to five times
/// on a machine running a dozen threads on two cores (a large text's tables leave the cache where
/// a small one's stay), a scan re-reading a window per key six to twenty times. Both sizes stay under
/// the furthest a value is read on ([`crate::judge::MAX_SPAN`]): a path re-reading a bounded
/// window for each key is quadratic over the whole range, where between 20 KB and 200 KB it
/// levelled off at the window and passed.
const SMALL: usize = 4_000;
const LARGE: usize = 64_000;
const RUNS: u32 = 16;
const LINEAR_LIMIT: u32 = 6;

/// The cost of [`RUNS`] scans of [`SMALL`] bytes and of one of [`LARGE`], each the least of five
/// tries taken in turn. Both last about as long, so a busy machine (a run waiting for a CPU, a
/// cache shared with other work) slows both alike, where a short scan against a long one would
/// see the long one alone interrupted; the least of five is the work.
fn scaling(cost: impl Fn(usize) -> Duration) -> (Duration, Duration) {
    let (mut small, mut large) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        small = small.min((0..RUNS).map(|_| cost(SMALL)).sum());
        large = large.min(cost(LARGE));
    }
    (small.max(Duration::from_micros(100)), large)
}

/// Each of `units` repeated scans in linear time, timed on its own: in a sum, one quadratic unit
/// among a hundred linear ones stays under the limit.
fn assert_units_linear(units: &[&str]) {
    let slow: Vec<_> = units
        .iter()
        .filter_map(|unit| {
            let (small, large) = scaling(|size| {
                let prompt = unit.repeat(size / unit.len() + 1);
                let started = Instant::now();
                let _ = findings(&prompt);
                let _ = strip_private(&prompt);
                started.elapsed()
            });
            (large >= small * LINEAR_LIMIT).then(|| format!("{unit:?}: {small:?} then {large:?}"))
        })
        .collect();
    assert!(slow.is_empty(), "{RUNS} x {SMALL} then {LARGE} bytes: {slow:#?}");
}

/// A glued `key=value` after a shell starter is an assignment's literal, the starter read as the
/// last word before the key however long the line (`--build-arg`, the longest); a longer word
/// ending the same way is no starter.
#[test]
fn a_shell_starter_is_the_last_word_before_the_key_on_a_long_line() {
    let pad = "x".repeat(300);
    let line = |before: &str| format!("docker build {pad} {before} db_password=opensesame .");
    assert_eq!(spans(&line("--build-arg")), ["opensesame"]);
    assert!(spans(&line("--build-argument")).is_empty());
    assert!(spans(&format!("{pad}--build-arg db_password=opensesame")).is_empty());
}

/// A qualifier after the secret word makes the key name something about the secret, in either
/// case; a key whose tail starts with a byte no qualifier starts with is the secret's.
#[test]
fn a_qualified_tail_is_told_by_its_first_letter_in_either_case() {
    assert!(spans("db_password_Hint=Zq8pLm2xQ7").is_empty());
    assert!(spans("db_password_hint=Zq8pLm2xQ7").is_empty());
    assert_eq!(spans("db_password_2=Zq8pLm2xQ7"), ["Zq8pLm2xQ7"]);
    assert_eq!(spans("db_password_yz=Zq8pLm2xQ7"), ["Zq8pLm2xQ7"]);
}

#[test]
fn a_base64_value_starting_with_a_slash_is_no_path_when_its_pieces_are_random() {
    assert_eq!(
        spans("aws_secret_access_key = /K7MDENG/bPxRfiCYzq8k2Lm3NpwJalrXUtnFEMI"),
        ["/K7MDENG/bPxRfiCYzq8k2Lm3NpwJalrXUtnFEMI"]
    );
    assert_eq!(
        spans(r#""client_secret": "/k9Xm2Pq7Rt4Lw8Zn3Vb6Yc1Hd5Fg0Js/Ae9Ui2Ow""#),
        ["/k9Xm2Pq7Rt4Lw8Zn3Vb6Yc1Hd5Fg0Js/Ae9Ui2Ow"]
    );
    // Paths: readable segments, a file's name, a version.
    assert_clean(&[
        r#""client_secret": "/etc/app/Secrets/client2024Secret.json""#,
        "secret_file = /home/Alice2/Projects/x9Kq3mZ7Lp2Rt8Vn4Bw/config",
        r#"token_path: "/var/run/secrets/kubernetes.io/serviceaccount/token""#,
        r#""secret": "/en/enterprise-server@3.0/auth""#,
    ]);
}

#[test]
fn a_hex_key_in_a_urls_query_is_an_api_key_not_a_digest() {
    assert!(
        find_secret("https://api.trello.com/1/members/me/boards?key=9649bea0a24c623e0745006b40ce7b3a")
            .is_some()
    );
    assert!(
            find_secret(
                "GET https://api.steampowered.com/ISteamUser/GetPlayerSummaries/v2/?key=5A1F0C3E9B7D2468ACE13579BDF02468&steamids=1"
            )
            .is_some()
        );
    assert!(
        find_secret("curl 'https://example.com/v1/list?page=2&key=9649bea0a24c623e0745006b40ce7b3a'")
            .is_some()
    );
    // An index's key holds an entry's digest.
    assert_clean(&[
        "cache key: 9649bea0a24c623e0745006b40ce7b3a",
        "the key 9649bea0a24c623e0745006b40ce7b3a was evicted",
        "key=9649bea0a24c623e0745006b40ce7b3a",
    ]);
}

#[test]
fn a_value_that_merely_starts_with_a_documented_example_is_a_secret() {
    assert!(find_secret("token: 123e4567-e89b-12d3-a456-426614174000.xK9mQ2zLp7vR4tB8nW3c").is_some());
    // The example alone, or before a plain field, stays clean.
    assert_clean(&[
        "token: 123e4567-e89b-12d3-a456-426614174000",
        "token: 123e4567-e89b-12d3-a456-426614174000. Is that right?",
    ]);
}

#[test]
fn a_cookie_named_for_a_password_or_a_key_holds_a_secret() {
    for (prompt, secret) in [
        ("Set-Cookie: password=peMXWuCybEek; Path=/", "peMXWuCybEek"),
        (
            "Cookie: lang=en; private_key=wqpLmzTxkvRb; theme=dark",
            "wqpLmzTxkvRb",
        ),
        ("Cookie: api_key=hjkqwrtzpxvm", "hjkqwrtzpxvm"),
    ] {
        let (redacted, kind) = redact(prompt);
        assert!(
            kind.is_some() && !redacted.contains(secret),
            "{prompt} => {redacted}"
        );
    }
    // A cookie whose name merely ends like one is a setting.
    assert_clean(&[
        "Set-Cookie: hotkeys=enabled; Path=/",
        "Cookie: monkey=banana",
        "Set-Cookie: passport_country=DE; Path=/",
    ]);
}

#[test]
fn an_escaped_quote_inside_a_value_keeps_the_value_whole() {
    for (prompt, secret) in [
        (r#"{"password": "Tr0ub4dor\"3xyzQ"}"#, "3xyzQ"),
        (r#"password="Xk9\"mQ2zLp7vR4""#, "mQ2zLp7vR4"),
        (r#"my password is "Xk9mQ2\"zLp7vR4""#, "zLp7vR4"),
    ] {
        let (redacted, kind) = redact(prompt);
        assert!(
            kind.is_some() && !redacted.contains(secret),
            "{prompt} => {redacted}"
        );
    }
    // Quoted words in a string are a quoted document's (see the escaped-JSON test).
    assert_eq!(
        spans(r#"{"prompt": "set it: {\"client_secret\": \"p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5\"}"}"#),
        ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]
    );
}

#[test]
fn a_tag_inside_a_quoted_value_or_outside_a_code_element_is_text() {
    for (prompt, secret) in [
        (r#"<pre>password = "Xk9mQ2<i>zLp7vR4"</pre>"#, "zLp7vR4"),
        (r#"&quot;x&quot; then password = "Xk9mQ2<b>zLp7vR4""#, "zLp7vR4"),
    ] {
        let (redacted, kind) = redact(prompt);
        assert!(
            kind.is_some() && !redacted.contains(secret),
            "{prompt} => {redacted}"
        );
    }
    // Markup between code lines still splits them.
    assert_eq!(
        spans("<pre><code><span>client_secret = p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5</span></code></pre>"),
        ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]
    );
}

#[test]
fn a_line_repeating_a_weak_key_or_a_cmdlet_is_scanned_in_linear_time() {
    // Each occurrence once looked back to its line's start (a weak key's qualifier) or
    // forward to its end (`-AsPlainText`): quadratic on one long line.
    for unit in ["key: abcdefgh ", "ConvertTo-SecureString "] {
        let (small, large) = scaling(|size| {
            let started = Instant::now();
            let prompt = unit.repeat(size / unit.len());
            let _ = findings(&prompt);
            let _ = strip_private(&prompt);
            started.elapsed()
        });
        assert!(
            large < small * LINEAR_LIMIT,
            "{unit:?}: {RUNS} x {SMALL} bytes took {small:?}, {LARGE} took {large:?}"
        );
    }
    // The look-back still reads a qualifier: an index word's digest is no secret, a key is.
    assert_clean(&["cache key: 9649bea0a24c623e0745006b40ce7b3a"]);
    assert!(find_secret(r#"$p = ConvertTo-SecureString "Zq8!pLm2xQ" -AsPlainText -Force"#).is_some());
}

/// Review findings: a value the filter recognised must be redacted whole, so that neither a
/// redacted capture nor the recall query carries the rest of it.
#[test]
fn review_a_recognised_value_is_redacted_whole() {
    let mut leaks = Vec::new();
    for (prompt, tail) in [
        ("DB_PASSWORD=Abcd3fGh,Xyz12Q", "Xyz12Q"),
        ("db_password: Abcd3fGh,Xyz12Q", "Xyz12Q"),
        ("spring.datasource.password=Abcd3fGh,Xyz12Q", "Xyz12Q"),
        ("DB_PASSWORD=Abcd3fGh'Xyz12Q", "Xyz12Q"),
    ] {
        let (redacted, kind) = redact(prompt);
        if kind.is_none() || redacted.contains(tail) {
            leaks.push(format!("{prompt} => {redacted}"));
        }
    }
    assert!(leaks.is_empty(), "part of a secret survives: {leaks:#?}");
}

/// Review findings: a quoted value of a strong key is the user's password whatever it contains
/// (a passphrase has spaces; a generated password has `,`, `(` or `<`).
#[test]
fn review_quoted_and_punctuated_passwords_are_found() {
    let mut missed = Vec::new();
    for prompt in [
        r#"{"password": "correct horse battery staple"}"#,
        r#"DB_PASSWORD="correct horse battery staple""#,
        "export DB_PASSWORD='Abc!d3f Gh Xyz'",
        "DB_PASSWORD=Abc(d3f)GhXyz",
        "DB_PASSWORD=Abc<d3fGhXyz",
        "DB_PASSWORD=Abc,d3fGhXyz",
        // `%s` glued to what follows is part of a random password, not a printf slot.
        "DB_PASSWORD=Zq8%sLm2x!",
        r#"{"password": "Xy7%sKq9Lm"}"#,
    ] {
        if find_secret(prompt).is_none() {
            missed.push(prompt);
        }
    }
    assert!(missed.is_empty(), "not detected: {missed:#?}");
    assert_clean(&[
        "password = \"%s\" % pw",
        "DB_PASSWORD=user_%s",
        "token: \"Bearer %s\"",
        "auth_token = \"%s:%s\" % (a, b)",
    ]);
}

/// The span of a recognised value covers all of it: to the blank for an env literal, to the
/// closing quote for a quoted one, to the next `;Name=` in a connection string; structure
/// around a value in code stays outside.
#[test]
fn spans_cover_the_whole_value() {
    assert_eq!(spans("DB_PASSWORD=Abcd3fGh;Xyz12Q"), ["Abcd3fGh;Xyz12Q"]);
    assert_eq!(spans("export DB_PASSWORD=R00tP4ss! && make"), ["R00tP4ss!"]);
    assert_eq!(spans("db_password: R00tP4ss!"), ["R00tP4ss!"]);
    assert_eq!(spans("export DB_PASSWORD='Abc!d3f Gh Xyz'"), ["Abc!d3f Gh Xyz"]);
    assert_eq!(
        spans(r#"{"password": "correct horse battery staple"}"#),
        ["correct horse battery staple"]
    );
    assert_eq!(
        spans("Server=db;Password=Abc,d3fGhXyz;Database=x"),
        ["Abc,d3fGhXyz"]
    );
    assert_eq!(spans("f(password=Zq7kLm2p)"), ["Zq7kLm2p"]);
    assert_eq!(spans("{password: Zq7kLm2p}, next"), ["Zq7kLm2p"]);
    assert_eq!(spans("docker run -e 'DB_PASSWORD=Zq7kLm2p' x"), ["Zq7kLm2p"]);
    let (text, _) = redact("DB_PASSWORD=R00tP4ss!");
    assert_eq!(text, "DB_PASSWORD=[REDACTED:assignment]");
}

#[test]
fn short_weak_key_values_prose_phrasings_and_real_looking_example_values_are_found() {
    for text in [
        "DB_PASS=Xk9#mQ2$vL",
        "auth=Xk9#mQ2$vL",
        "the password for prod is Zq7kLm2p",
        "my pw is Zq7kLm2p",
        "use password \"hunter2\"",
        "my password: correcthorsebatterystaple",
        "password=Example123!",
        "DB_PASSWORD=Chang3me!xxxx",
    ] {
        assert!(find_secret(text).is_some(), "not detected: {text:?}");
    }
    assert_clean(&[
        "password=example",
        "API_KEY=YOUR_API_KEY",
        "token: your-token-here",
        "SECRET_KEY=change-me",
        "password = \"<placeholder>\"",
        "cache_key = f\"user:{user_id}\"",
        "password = get_password()",
        "password: \"Please enter your password\"",
        "the password for prod is in the vault",
        "my pw is weak",
        "the token: authentication",
        "upward=Zq7kLm2p",
        "auth=enabled-by-default",
        "PASSWORD=yourpassword",
        "token = changemeplease",
        r#"{"key": "ctrl+shift+1"}"#,
        "auth=Dep@Host12",
    ]);
}

/// A secret word that qualifies the key (`PASSWORD_ALGORITHM`, `existingSecret`) makes it
/// metadata; public key ids and WebSocket nonces are not secrets.
#[test]
fn qualified_keys_and_public_key_ids_are_not_secrets() {
    assert_clean(&[
        "PASSWORD_ALGORITHM=argon2id",
        "TOKEN_ISSUER=auth0",
        "SECRET_BACKEND=vault",
        "GITHUB_TOKEN_SCOPE=repo",
        "existingSecret: postgres-credentials-v2",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "gpg --keyserver keys.openpgp.org --recv-keys 3AA5C34371567BD2",
        "gpg --default-key 0x3AA5C34371567BD2 --sign file",
        "git config --global user.signingkey 3AA5C34371567BD2",
        "PASSWORD_MIN_LENGTH=12",
        "PASSWORD_ROUNDS=10000",
    ]);
}

/// Values that start like a reference or a placeholder but are not one, all-digit passwords
/// and letters-only YAML passwords are secrets; type and schema words are not.
#[test]
fn symbol_led_digit_and_letter_passwords_are_found_but_schema_words_are_not() {
    for text in [
        "DB_PASSWORD=$uP3r-S3cret!9",
        r#""password": "{Xk9#mQ2z""#,
        "password = '[Zt8!pq4Lm'",
        "DB_PASSWORD=-h4ck3rPw!9",
        "SECRET_KEY=/k9Fz2LqP8sT1vXyR4wN7mB0cD3eH6jU=",
        "password=!Welcome",
        "DB_PASSWORD=84619273",
        "password: 20240315",
        "password: SuperSecretPassword",
        "password: qwertyuiop",
        "  adminPassword: RoseBudGarden\n  user: admin",
        "- password: trustno-one-ever",
    ] {
        assert_eq!(findings(text).len(), 1, "not detected: {text:?}");
    }
    assert_clean(&[
        "password: $DB_PASSWORD",
        "curl -u \"$USER:$PASS\" https://ci",
        "password: !vault |",
        "password: !!binary |",
        "DB_PASSWORD=--from-env",
        "password: 2024-03-15",
        "SECRET_KEY=/etc/app/secret.key",
        "password: str",
        "password: String",
        "password: SecretStr",
        "password: string;",
        "password: required",
        "password: true",
        "password: null",
        "password: hidden",
        "password: PasswordField",
        "password: PasswordInput",
        "password: password",
        "the password: qwertyuiop is weak",
        "password: Secret",
        "password: secretRef",
        // A short word names a choice (a hashing scheme, an auth method).
        "validation:\n  password: required\n  password_confirm: confirmed",
        "hash:\n  password: Bcrypt",
        "mysql:\n  password: Native",
        "env:\n  password: Inherit",
        "fixture: AAAAAAAAAAAAAAAAAAAAAL4r7TNjQ8mZp2Vx9KcW3bF6hR1tY5uE0oI7sD4gA2jL8nM3qX6vB9wC1zP5kJ0hG4fT7yU2iO8eR3wQ6aS1dF9gH5jK+lZ0xC3vB7nM==",
        "Rosebud",
    ]);
}

#[test]
fn more_commands_and_sql_take_passwords() {
    for (text, secret) in [
        ("mongosh mongodb://db:27017 -u admin -p Tq8vRw2zLp", "Tq8vRw2zLp"),
        (
            "mongo -u admin -p Tq8vRw2zLp --authenticationDatabase admin",
            "Tq8vRw2zLp",
        ),
        ("sqlcmd -S srv -U sa -P Tq8vRw2zLp -Q \"select 1\"", "Tq8vRw2zLp"),
        (
            "ldapsearch -x -D cn=admin,dc=ex -w Tq8vRw2zLp -b dc=ex",
            "Tq8vRw2zLp",
        ),
        ("ldapmodify -D cn=admin -w Tq8vRw2zLp -f x.ldif", "Tq8vRw2zLp"),
        ("smbclient //srv/share -U bob%Tq8vRw2zLp", "Tq8vRw2zLp"),
        ("lftp -u bob,Tq8vRw2zLp ftp.example.org", "Tq8vRw2zLp"),
        ("http -a bob:Tq8vRw2zLp https://api.example.org/me", "Tq8vRw2zLp"),
        (
            "ALTER USER 'root'@'localhost' IDENTIFIED BY 'Tq8vRw2zLp';",
            "Tq8vRw2zLp",
        ),
        (
            "CREATE USER app IDENTIFIED WITH caching_sha2_password BY 'Tq8vRw2zLp';",
            "Tq8vRw2zLp",
        ),
        ("CREATE USER app WITH PASSWORD 'Tq8vRw2zLp';", "Tq8vRw2zLp"),
    ] {
        assert_eq!(spans(text), [secret], "{text}");
    }
    assert_clean(&[
        "docker run -p 27017:27017 mongo:7",
        "sqlcmd -S srv -U sa -P",
        "smbclient //srv/share -U bob",
        "ldapsearch -x -W -b dc=ex",
        "see the http -a flag docs",
        "users identified by email",
    ]);
}

/// Provider shapes with a structure of their own (ids, separators, fixed parts).
#[test]
fn more_provider_shapes_are_found_whole() {
    for (token, name) in [
        ("4533314789:AAEsaJd_wyXxQPplH8ACyjkz4jmBQlm7knI", "telegram_token"),
        (
            "MTA4pShZFC8ZrXbeg_fT3pG-.h8msMl.c-T1ah9sdbEl7oX8nrEHAluvtdgDW1-In81LJK",
            "discord_token",
        ),
        (
            "sk.eyJ1Ijo6yc-jecsblnAk2vnXK6-Zy2GKlPOyJV9YZGWNkJnsrUgBhcpqIuRhWlMkU6a.g5t_Zj3aoeWqeHGwlifXjw",
            "mapbox_token",
        ),
        (
            "patVEnIKXVuuEomFK.dc6c369aad6b68b75b48e99f73f289509dddc3ebffc5ccd8099ee02cab83bb43",
            "airtable_token",
        ),
        (
            "AAAAAAAAAAAAAAAAAAAAACS6jkdFKsvw8f46QqXYilvBSbELgGOBomUOLc877%3DEgNB6bfbdUwFDrzIe3mGxHoL43ScQQYK8TUkl1JYnrw8tdVIIf",
            "twitter_token",
        ),
        (
            "EAAHmxOCTQE8phIECUyUALDgxkhOFosZYG9uVqv8ExVuo5Zbcb99JpX9M02bB3f8nUVRBoMFTXptvp7WhPvFMKFl8zE8Ajlb0cdkbx9ZFqJDGf1rB853IgN95Dc",
            "facebook_token",
        ),
        (
            "CCIPAT_i7xD93lgWk7J6rWs77hSx9_80598e7d8a50f510dc6c4393a96e78c3403049d3",
            "circleci_token",
        ),
        (
            "pcsk_CrNip_R0HjXFZfTvMUHoXTBzyTzbmncNnz5BhgJjH3LZ7wM6GKHVjk9tCSi5eIeeaAXZY",
            "pinecone_key",
        ),
        ("fo1_IYLsD6c060ZGUfpDNhmMLm43B3OjdK2OLMdNJTkzc_8", "flyio_token"),
        (
            "fm2_pRXhWNEuCbY+e3ZVMkfcDWKbFYV6RZc123ybgnl8LzRRIC7wQqVThu1r2WZxfm2rBvqZptcSyEXcg+8+8oeNu9Jchmw9pUNlWbDrio9ToGG1/ONo64osfMnadO70l5EEM43Onetvxr/BkuSzwPMg2eXVVwnDeV3yQjVPhfafwTfg+uWMvnH+iG9te7WmA9i7w8QJUr4Z",
            "flyio_token",
        ),
        ("nfp_FHCRQ44IHJ5lByNt5TPiKEuor5ClFKHu6MUb", "netlify_token"),
        ("aio_gXOsHzoMp7BKOHNfEkalT2ib0Z8v", "adafruit_key"),
        (
            "dp.st.prd.oX2D86ByvkNx5MYjCPC1zaPLvaLO7ZOE8JV45sXq",
            "doppler_token",
        ),
        (
            "dp.sa.GwpFOB1edmZ9AZnSgYWGB3c5pjdrDkfAIfAalRM8rUw",
            "doppler_token",
        ),
    ] {
        let text = format!("use {token}, thanks");
        assert_eq!(find_secret(&text), Some(SecretKind::Vendor(name)), "{token}");
        assert_eq!(spans(&text), [token]);
    }
    assert_eq!(
        spans(
            "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=sP2Cpfk%2BPeZJV5DIx7xu6SrYiyMUJEm%3D&x=1"
        ),
        ["sP2Cpfk%2BPeZJV5DIx7xu6SrYiyMUJEm%3D"]
    );
    assert_kind(
        SecretKind::AuthHeader,
        &["Authorization: SSWS 00DWzP9WYJof5Hzt4XJUtv2tIEpc1ke4M4innZMcWU"],
    );
    assert_clean(&[
        "the pattern and path modules",
        "sig=SIGTERM",
        "Order 1234567890:AAB shipped",
        "MTAJMlA4JahKDNl9sW7W6zCJ.IFrNYf",
        "pathlib.Path.home.joinpath.with.many.segments.that.run.on.and.on.forever.k7Qz2mWpi",
    ]);
}

/// Four-dash and SSH2 armors and PuTTY's private lines are private keys, whole.
#[test]
fn older_private_key_armors_and_putty_files_are_private_keys() {
    let block = "----BEGIN RSA PRIVATE KEY----\nMIIEowIBAAKCAQEAq7Bz\nab+/cd==\n----END RSA PRIVATE KEY----";
    assert_eq!(spans(&format!("key:\n{block}\nthanks")), [block]);
    let ssh2 = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\nP2/56wAAAtw\n---- END SSH2 ENCRYPTED PRIVATE KEY ----";
    assert_eq!(spans(ssh2), [ssh2]);
    let private = "Private-Lines: 1\nAAAAIGq7BzQ2zLp9Xk\nPrivate-MAC: 5f2a9c";
    let ppk = format!("PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1\n{private}");
    assert_eq!(spans(&ppk), [private]);
    assert_clean(&[
        "---- BEGIN SSH2 PUBLIC KEY ----",
        "----BEGIN PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY----",
        "---BEGIN PRIVATE KEY---",
    ]);
}

/// A prompt of BEGIN lines without an END line: the END search is done once over the text,
/// not once per line over a 16 KiB window.
#[test]
fn begin_lines_without_an_end_search_the_text_once() {
    let prompt = "-----BEGIN RSA PRIVATE KEY-----\n".repeat(200_000 / 32);
    let mut scan = crate::scan::Scan::new(&prompt);
    scan.run();
    assert_eq!(scan.found.len(), 200_000 / 32);
    assert!(
        scan.pem_searched <= 2 * prompt.len(),
        "searched {} bytes for a {}-byte prompt",
        scan.pem_searched,
        prompt.len()
    );
    // An END line further on still closes the block.
    let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\n-----END RSA PRIVATE KEY-----";
    let text = format!("{}{block}", "-----BEGIN RSA PRIVATE KEY-----\n".repeat(3));
    assert_eq!(findings(&text).last().map(|f| f.end), Some(text.len()));
}

/// The word for password in other languages is a key as `password` is, with the same value
/// rules: a mapping needs a digit or symbol, prose a random-looking word.
#[test]
fn password_words_of_other_languages_take_the_same_values() {
    for text in [
        "mein Passwort ist Xy7!kq9Lm",
        "Passwort: Xy7!kq9Lm",
        "Kennwort: Xy7!kq9Lm",
        "mot de passe : Xy7!kq9Lm",
        "le mot de passe est Xy7!kq9Lm",
        "contraseña: Xy7!kq9Lm",
        "mi contraseña es Xy7!kq9Lm",
        "clave: Xy7!kq9Lm",
        "senha: Xy7!kq9Lm",
        "minha senha é Xy7!kq9Lm",
        "la password è Xy7!kq9Lm",
        "密码：Xy7!kq9Lm，谢谢",
        "我的密码是Xy7!kq9Lm。",
        "パスワード：Xy7!kq9Lm",
        "パスワードはXy7!kq9Lmです",
        "пароль: Xy7!kq9Lm",
        "мой пароль Xy7!kq9Lm",
        "das Passwort für prod ist Xy7!kq9Lm",
        "a senha do banco é Xy7!kq9Lm",
    ] {
        assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
    }
    assert_eq!(spans("clave de acceso: hunter22"), ["hunter22"]);
    assert_eq!(spans("clave secreta = \"hunter22\""), ["hunter22"]);
    assert_clean(&[
        "Passwort: ändern",
        "Das Passwort ist zu kurz.",
        "Passwortlänge: 12",
        "mot de passe oublié",
        "Le mot de passe est incorrect.",
        "la contraseña es obligatoria",
        "clave primaria: id_usuario",
        "enclave: sgx-enclave-01",
        // A bare `clave` is any key in Spanish.
        "{\"clave\": \"valor\"}",
        "clave = \"nombre\"",
        "la clave es nombre_usuario",
        "a senha é obrigatória",
        "密码：请输入",
        "密码错误，请重试",
        "密码学是一门科学",
        "密码长度：8-16位",
        "パスワードは8文字以上",
        "Пароль: обязательно",
        "пароля нет",
        "the password is Größe",
        // Hashing and encryption named after the word, in any language.
        "パスワードはAES-256で暗号化",
        "パスワードはPBKDF2-SHA256でハッシュ化",
        "密码是SHA-256哈希",
        "密码是RSA-2048加密",
        "密碼為SHA-512",
        "the password is PBKDF2-SHA256 hashed",
        "das Passwort ist SHA-256 gehasht",
        "la contraseña es AES-256",
        "a senha é argon2id",
        "пароль RSA-4096",
    ]);
    // A password that merely starts like an algorithm is still one.
    assert_eq!(spans("密码是AES-Xy7!kq9Lm"), ["AES-Xy7!kq9Lm"]);
    assert_eq!(spans("the password is sha-256-Zq8!pLm2x"), ["sha-256-Zq8!pLm2x"]);
}

/// A table whose header names a secret column, and a SQL `INSERT` column list: the cell in
/// that column of each row is the column's value, judged as `password: …` is.
#[test]
fn table_cells_under_a_secret_column_are_values() {
    for (text, secret) in [
        ("user,password\nadmin,Zq8!pLm2x", &["Zq8!pLm2x"][..]),
        (
            "name,url,username,password\nmail,https://mail.example.org,bob,Zq8!pLm2x\nbank,https://bank.example.org,bob,Xy7!kq9Lm",
            &["Zq8!pLm2x", "Xy7!kq9Lm"],
        ),
        ("\"user\",\"password\"\n\"admin\",\"Zq8!pLm2x\"", &["Zq8!pLm2x"]),
        ("username\tpassword\nadmin\tZq8!pLm2x", &["Zq8!pLm2x"]),
        ("user,password\nÉmile,Zq8!pLm2x", &["Zq8!pLm2x"]),
        (
            "user,password\nbob,Xy7!kq9Lm\n张伟,Zq8!pLm2x",
            &["Xy7!kq9Lm", "Zq8!pLm2x"],
        ),
        (
            "| user | password |\n|---|---|\n| admin | Zq8!pLm2x |",
            &["Zq8!pLm2x"],
        ),
        (
            "| User | API key |\n| --- | --- |\n| ci | `Qm3xT8wPz1Lk9` |",
            &["Qm3xT8wPz1Lk9"],
        ),
        (
            "INSERT INTO users (name, password) VALUES ('bob', 'S3cr3t!pw')",
            &["S3cr3t!pw"],
        ),
        (
            "insert into `users` (`name`, `password`)\nvalues ('bob', 'S3cr3t!pw'), ('al', 'Xy7!kq9Lm');",
            &["S3cr3t!pw", "Xy7!kq9Lm"],
        ),
    ] {
        assert_eq!(spans(text), secret, "{text}");
    }
    assert_clean(&[
        "user,password\nadmin,changeme",
        "user,password\nadmin,Rosebud",
        "| user | password |\n|---|---|\n| ops | see vault |",
        "| Name | Description | Secret |\n|---|---|---|\n| DB_PASSWORD | The database password | yes |",
        "| Token | Meaning |\n|---|---|\n| IDENT | identifier |\n| `->` | arrow |",
        "text,tokens\nhello,5",
        "\"password\",\n\"und-PY\",",
        "return user, token\nyield from self.tokenize(var.base, VARIABLE)",
        "SELECT user,password\nFROM users WHERE id = 1",
        "INSERT INTO users (name, password) VALUES ($1, $2)",
        "INSERT INTO users (name, password) VALUES ('test', 'test')",
        "INSERT INTO users (name, password_hash) VALUES ('bob', 'abcdef123456')",
        // A token column holds lexer, design or model tokens as often as credentials.
        "| Token | Value |\n|---|---|\n| color-blue-500 | #3b82f6 |",
        "\"id\",\"token\"\n\"1\",\"hello\"",
        "INSERT INTO lexer_tokens (token, kind) VALUES ('SELECT','keyword')",
        "| Token | Count |\n|---|---|\n| ▁world | 3 |",
        // A quoted cell is judged as an unquoted one: a word is not a password.
        "\"user\",\"password\"\n\"admin\",\"Rosebud\"",
        "user,password\nadmin,correct-horse-battery",
    ]);
    assert_eq!(spans("id,token\n1,Zq8kLm2xPq7RtY4w"), ["Zq8kLm2xPq7RtY4w"]);
    assert_eq!(
        spans("| Token | Owner |\n|---|---|\n| `Qm3xT8wPz1Lk9vB2` | ci |"),
        ["Qm3xT8wPz1Lk9vB2"]
    );
}

/// A user and a password passed together to what names authentication: the second string is
/// the password when it looks random.
#[test]
fn a_markdown_table_of_names_and_values_gives_each_secret_names_value() {
    assert_found(&[
        "Which of these do I still need?\n| Variable | Value |\n|---|---|\n| DB_HOST | db.internal |\n| DB_PASSWORD | Tr0ub4dor&3xyz |",
        "| `client_secret` | `6ed3d652a092f72343b649640341d7afcf04a734` | rotated in May |",
        "  | **Api Key** | \"q7XbN2vLp9RzT4kW8mYc\" |",
        "| password | hunter2 |",
    ]);
    assert_clean(&[
        // A header row names columns; the rows under it describe them.
        "| password | description |\n|---|---|\n| a | b |",
        "| `password` | The password used to log in |",
        "| access_token | str | The OAuth token |",
        "| password | `str` | |",
        "| `DB_PASSWORD` | `${{ secrets.DB_PASSWORD }}` |",
        "| token | <your token> |",
        "| API_KEY | your-api-key-here |",
        "| password | ******** |",
        // Not the row's first cell, or no row at all.
        "| db | password | Tr0ub4dor&3xyz |",
        "see the password | Tr0ub4dor&3xyz",
    ]);
}

#[test]
fn a_table_header_is_split_once_per_line() {
    let line = format!("{}password\n", "password,".repeat(55));
    let prompt = line.repeat(200_000 / line.len());
    let mut scan = crate::scan::Scan::new(&prompt);
    scan.run();
    assert!(
        scan.table_read <= 2 * prompt.len(),
        "split {} bytes of a {}-byte prompt",
        scan.table_read,
        prompt.len()
    );
}

#[test]
fn a_password_passed_with_its_user_is_found() {
    for text in [
        r#"auth=("admin", "Zq8!pLm2x")"#,
        r#"r = requests.get(url, auth=("admin", "Zq8!pLm2x"), timeout=5)"#,
        r#"requests.auth.HTTPBasicAuth("admin", "Zq8!pLm2x")"#,
        r#"aiohttp.BasicAuth(user, 'Zq8!pLm2x')"#,
        r#"client.login("user", "Zq8!pLm2x")"#,
        r#"server.login(os.environ["SMTP_USER"], "Zq8!pLm2x")"#,
        r#"db.check_password("bob", "Zq8!pLm2x")"#,
    ] {
        assert_eq!(spans(text), ["Zq8!pLm2x"], "{text}");
    }
    assert_clean(&[
        "auth = HTTPBasicAuth(user, password)",
        r#"auth=("admin", os.environ["PW"])"#,
        r#"login("user", "test")"#,
        r#"ftp.login('anonymous', 'guest@example.com')"#,
        r#"author("Jane", "Austen1")"#,
        r#"raise AuthenticationError(self.buffer, "Unexpected data received")"#,
        r#"keyring.get_credential(service, "nobody!")"#,
    ]);
}

/// Commands that take a password as an argument or on their input.
#[test]
fn password_arguments_of_more_commands_are_found() {
    for (text, secret) in [
        ("htpasswd -b .htpasswd admin Zq8!pLm2x", &["Zq8!pLm2x"][..]),
        (
            "sudo htpasswd -bc /etc/nginx/.htpasswd admin Zq8!pLm2x",
            &["Zq8!pLm2x"],
        ),
        ("htpasswd -nbBC 12 admin Zq8!pLm2x", &["Zq8!pLm2x"]),
        ("ssh-keygen -t ed25519 -N 'Zq8!pLm2x' -f key", &["Zq8!pLm2x"]),
        (
            "ssh-keygen -p -P 'Xy7!kq9Lm' -N 'Zq8!pLm2x' -f key",
            &["Xy7!kq9Lm", "Zq8!pLm2x"],
        ),
        ("wpa_passphrase MyWifi Zq8pLm2xQ", &["Zq8pLm2xQ"]),
        ("openssl rsa -in k.pem -passout pass:Zq8pLm2xQ", &["Zq8pLm2xQ"]),
        (
            "openssl pkcs12 -export -passin pass:Zq8pLm2xQ -out c.p12",
            &["Zq8pLm2xQ"],
        ),
        ("openssl enc -aes-256-cbc -k Zq8pLm2xQ -in f", &["Zq8pLm2xQ"]),
        ("mysqladmin -u root -pZq8pLm2xQ status", &["Zq8pLm2xQ"]),
        ("echo 'bob:Zq8pLm2xQ' | sudo chpasswd", &["Zq8pLm2xQ"]),
        ("chpasswd <<< 'bob:Zq8pLm2xQ'", &["Zq8pLm2xQ"]),
        (
            "chpasswd <<EOF\nbob:Zq8pLm2xQ\nalice:Xy7!kq9Lm\nEOF",
            &["Zq8pLm2xQ", "Xy7!kq9Lm"],
        ),
        ("net user bob Zq8pLm2xQ /add", &["Zq8pLm2xQ"]),
        ("C:\\> net user bob Zq8pLm2xQ /add", &["Zq8pLm2xQ"]),
        ("$ sudo htpasswd -b f bob hunterpass", &["hunterpass"]),
        ("cd /etc && htpasswd -b f bob hunterpass", &["hunterpass"]),
        ("Run `wpa_passphrase MyWifi hunterpass` once", &["hunterpass"]),
        ("then run wpa_passphrase MyWifi Zq8pLm2xQ", &["Zq8pLm2xQ"]),
        ("then run net user bob 'hunterpass'", &["hunterpass"]),
        (
            "openssl enc -k Zq8pLm2xQ -in f ; curl -k localhost:8443/health",
            &["Zq8pLm2xQ"],
        ),
    ] {
        assert_eq!(spans(text), secret, "{text}");
    }
    assert_clean(&[
        "sudo htpasswd -c /etc/nginx/.htpasswd admin",
        "htpasswd -b .htpasswd admin \"$PASSWORD\"",
        "htpasswd -D .htpasswd admin",
        "ssh-keygen -t ed25519 -N '' -f key",
        "wpa_passphrase MyWifi > /etc/wpa_supplicant.conf",
        "openssl rsa -in k.pem -passin env:KEY_PASS",
        "openssl rsa -in k.pem -passin file:pw.txt",
        "openssl s_client -connect host:443 | curl -k https://host/x",
        "printf 'bob:%s\\n' \"$PW\" | chpasswd",
        "echo \"$USER:$PASS\" | chpasswd",
        "run chpasswd at 12:30, see http://wiki/x",
        "net user bob * /add",
        "net user bob /delete",
        // Prose about the commands, not a command line.
        "Run net user to list accounts",
        "Run wpa_passphrase to generate the PSK",
        "htpasswd -b is insecure because the password shows in ps",
        "the net user output shows Guest",
        // A flag of the next command in the pipeline is not openssl's or ssh-keygen's.
        "openssl s_client -connect x:443 ; curl -k localhost:8443/health",
        "openssl s_client -connect x:443 && curl -k localhost:8443/health",
        "ssh-keygen -l -f key.pub | head -N foobarbaz",
    ]);
}

/// Password hashes: crypt's `$id$…` forms and `/etc/shadow` lines, whole.
#[test]
fn password_hashes_are_found_whole() {
    let hashes = [
        "$2b$12$xLh40/TtNxbVOzjwNGRt4k/ByGnYT64twED0L.Ut.KoxgOZfN9c.Z",
        "$2y$10$a.4FAY0uf9YJ0vCEJHCPq1gSYup6RPoGDIW6rRUOw9SLiHExHbCgU",
        "$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
        "$6$rounds=5000$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
        "$5$Qw3rTy7u$zaUsoEFj7C8ueSgHIo06cZQ8O8Mzwnv486q79jJcu53",
        "$1$Qw3rTy7u$ddlMnLC6ydCDHhc9XAnLp0",
        "$apr1$Qw3rTy7u$XcPWfs9Q5DEj5ROsgPY/I1",
        "$y$j9T$8xjH3PxySlT46Q1eIYJ0q1$4TDtY.DjumUlZJrLH.2BoGV4cD9g9257kGyXTNAXtu4",
        "$argon2id$v=19$m=65536,t=3,p=4$YhbfQBwcs5v3+LegT48zgg$kN12xFma/L/yHYktx3h6yG8XSPZ51cnkjxn9qPJJBm0",
    ];
    for hash in hashes {
        let text = format!("the users table stores {hash} for bob");
        assert_eq!(find_secret(&text), Some(SecretKind::PasswordHash), "{hash}");
        assert_eq!(spans(&text), [hash]);
    }
    assert_eq!(
        spans("admin:$$apr1$$Qw3rTy7u$$XcPWfs9Q5DEj5ROsgPY/I1"),
        ["$apr1$$Qw3rTy7u$$XcPWfs9Q5DEj5ROsgPY/I1"]
    );
    let shadow = format!(
        "root:{}:19000:0:99999:7:::\nbob:7fg8LEGAKRwpC:19000::::::",
        hashes[2]
    );
    assert_eq!(spans(&shadow), [hashes[2], "7fg8LEGAKRwpC"]);
    assert_kind(
        SecretKind::PasswordHash,
        &["bob:!7fg8LEGAKRwpC:19000:0:99999:7:::"],
    );
    assert_clean(&[
        "daemon:*:19000:0:99999:7:::",
        "bob:!:19000:0:99999:7:::",
        "root:x:0:0:root:/root:/bin/bash",
        "echo $1$2 and $6$ costs",
        "awk '{print $1$2$3}'",
        "$2b$12$ is the bcrypt prefix",
        "$1$Qw3rTy7u$ddlMnLC6ydCDHhc9XAnLp",
    ]);
}

/// keytool's and jarsigner's store and key passwords, and the password argument of `net
/// use` (after the share, before or after `/user:`), plain only on a command line.
#[test]
fn keytool_store_passwords_and_net_use_passwords_are_found() {
    for (text, secret) in [
        (
            "keytool -list -keystore app.jks -storepass Zq8pLm2xQ",
            &["Zq8pLm2xQ"][..],
        ),
        (
            "keytool -genkeypair -alias app -keystore app.jks -storepass 'Xy7!kq9Lm' -keypass Zq8pLm2xQ -dname CN=app",
            &["Xy7!kq9Lm", "Zq8pLm2xQ"],
        ),
        (
            "keytool -importkeystore -srckeystore a.p12 -srcstorepass Zq8pLm2xQ -destkeystore b.jks -deststorepass Xy7!kq9Lm",
            &["Zq8pLm2xQ", "Xy7!kq9Lm"],
        ),
        (
            "keytool -keypasswd -alias a -srckeypass hunterpass -destkeypass Zq8pLm2xQ",
            &["hunterpass", "Zq8pLm2xQ"],
        ),
        (
            "jarsigner -keystore k.jks -storepass Zq8pLm2xQ app.jar app",
            &["Zq8pLm2xQ"],
        ),
        (
            "net use \\\\fs01\\share Zq8pLm2xQ /user:CORP\\bob",
            &["Zq8pLm2xQ"],
        ),
        ("net use Z: \\\\srv\\s /user:bob Zq8pLm2xQ", &["Zq8pLm2xQ"]),
        (
            "C:\\> net use Z: \\\\srv\\s hunterpass /persistent:no",
            &["hunterpass"],
        ),
        ("then run net use Z: \\\\srv\\s 'hunterpass'", &["hunterpass"]),
    ] {
        assert_eq!(spans(text), secret, "{text}");
        assert_eq!(find_secret(text), Some(SecretKind::CommandLine), "{text}");
        let (redacted, _) = redact(text);
        assert!(secret.iter().all(|s| !redacted.contains(s)), "{redacted}");
    }
    assert_clean(&[
        "keytool -list -keystore x.jks",
        "keytool -list -keystore x.jks -storepass changeit",
        "keytool -list -keystore x.jks -storepass:env STORE_PASS",
        "keytool -list -keystore x.jks -storepass $STORE_PASS",
        "keytool asks for -storepass with every command",
        "net use Z: \\\\srv\\share /persistent:yes",
        "net use Z: \\\\srv\\share * /user:CORP\\bob",
        "net use Z: /delete",
        "run net use Z: \\\\srv\\share with your password",
    ]);
}

/// Werkzeug's and Django's stored hashes (`algorithm[:params]$…$hash`) and LDAP's
/// `{SCHEME}` hashes, whole, of their real lengths.
#[test]
fn werkzeug_django_and_ldap_password_hashes_are_found() {
    for hash in [
        "pbkdf2:sha256:600000$Ab3dEf6hIj9kLm2n$5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
        "scrypt:32768:8:1$Ab3dEf6hIj9kLm2n$51772ae082ed5f28cf9b0d74ba3df8384a076c529ebc1e68a7e9aeca2b155fde41cad2fcdfb211fb5c0e09ff985c5e5f2a678644681b3651d192faebda190e81",
        "pbkdf2_sha256$600000$Xk3mQ9zR2pLw8vT1nB4cHy$0s3yQm2kP9xLr7vT4nB1cWz8dF5gH6jK3lM9pQ2rS0u=",
        "argon2$argon2id$v=19$m=102400,t=2,p=8$dGhpc2lzYXNhbHQxMg$2BbvhuD4mWclbPJYNTOpT+T6hlDkUGjhSszFleLV1lQ",
        "bcrypt_sha256$$2b$12$xLh40/TtNxbVOzjwNGRt4k/ByGnYT64twED0L.Ut.KoxgOZfN9c.Z",
    ] {
        let text = format!("the auth_user row holds {hash} for bob");
        assert_eq!(find_secret(&text), Some(SecretKind::PasswordHash), "{hash}");
        assert_eq!(spans(&text), [hash]);
    }
    for (text, hash) in [
        (
            "userPassword: {SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
            "Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
        ),
        (
            "userPassword: {SHA}ROJmJLOC3sZjQbCoA8HuEry+yDc=",
            "ROJmJLOC3sZjQbCoA8HuEry+yDc=",
        ),
        (
            "{SSHA512}1RVM/j520oLI8eKwwo+cFyflSQoeBsVlViNIze2fq4c1g1MUZMiINuVd6Zt40R60X/r3Zu2pw4oqMCzo5pCe/6MI1D9pTaKa",
            "1RVM/j520oLI8eKwwo+cFyflSQoeBsVlViNIze2fq4c1g1MUZMiINuVd6Zt40R60X/r3Zu2pw4oqMCzo5pCe/6MI1D9pTaKa",
        ),
        ("userPassword: {crypt}7fg8LEGAKRwpC", "7fg8LEGAKRwpC"),
        (
            "userPassword: {CRYPT}$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
            "$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
        ),
    ] {
        assert_eq!(find_secret(text), Some(SecretKind::PasswordHash), "{text}");
        assert_eq!(spans(text), [hash]);
        assert!(!redact(text).0.contains(hash));
    }
    assert_clean(&[
        "the {SHA} scheme is weak",
        "{SHA}abc123",
        // Words run together, of a salted SHA-1's length, are not its base64.
        "{SSHA}ThisIsNotAHashJustSomeLongerText",
        "olcPasswordHash: {SSHA}",
        "Django uses pbkdf2_sha256 by default",
        "the format is pbkdf2_sha256$<iterations>$<salt>$<hash>",
        "pbkdf2:sha256:600000$salt$hash",
        "PASSWORD_HASHERS = [\"django.contrib.auth.hashers.ScryptPasswordHasher\"]",
        "scrypt:32768:8:1 is werkzeug's default method",
    ]);
}

/// C#'s `NetworkCredential`, Java's `PasswordAuthentication` (its `char[]` from a string),
/// and keyring's `set_password`, whose password is the third argument.
#[test]
fn credential_constructors_and_keyring_passwords_are_found() {
    for text in [
        r#"var cred = new NetworkCredential("svc", "Zq8!pLm2x");"#,
        r#"client.Credentials = new System.Net.NetworkCredential("svc", "Zq8!pLm2x", "CORP");"#,
        r#"return new PasswordAuthentication("svc", "Zq8!pLm2x".toCharArray());"#,
        r#"keyring.set_password("smtp", "svc", "Zq8!pLm2x")"#,
    ] {
        assert_eq!(spans(text), ["Zq8!pLm2x"], "{text}");
    }
    // A client id (a UUID) before the secret is an identifier, and does not hide the secret.
    assert_eq!(
        spans(r#"new ClientSecretCredential(tenant, "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "Zq8!pLm2x")"#),
        ["Zq8!pLm2x"]
    );
    assert_clean(&[
        "new NetworkCredential(user, password)",
        r#"new NetworkCredential("svc", Environment.GetEnvironmentVariable("PW"))"#,
        r#"new PasswordAuthentication(user, pw.toCharArray())"#,
        r#"keyring.set_password("smtp", "svc", password)"#,
        r#"keyring.get_password("smtp", "svc")"#,
        r#"CredentialCache.GetCredential(uri, "Basic")"#,
        r#"store.GetCredentials("svc", "nobody!")"#,
        // A tenant and a client id are identifiers, a certificate's path is not a secret.
        r#"new ClientSecretCredential("72f988bf-86f1-41af-91ab-2d7cd011db47", "04b07795-8ddb-461a-bbee-02f9e1bf7b46", secret)"#,
        r#"new ClientCertificateCredential(tenantId, "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "certs/app-cert.pem")"#,
        // A call that configures authentication is given a scheme, not a user and password.
        r#"services.AddAuthentication("Cookies", "Zq8!pLm2xQ7")"#,
        r#"app.UseAuthentication("Bearer", "Zq8!pLm2xQ7")"#,
        r#"builder.WithAuthentication("Basic", "Zq8!pLm2xQ7")"#,
        r#"ConfigureAuthentication("Oidc", "Zq8!pLm2xQ7")"#,
    ]);
}

/// The foreign words for password in capitals, French's no-break space before its colon,
/// Korean and Dutch, and a foreign word as a segment of a longer key.
#[test]
fn more_languages_capitals_and_foreign_words_inside_keys_are_found() {
    for text in [
        "CONTRASEÑA: Xy7!kq9Lm",
        "PASSWORT: Xy7!kq9Lm",
        "KENNWORT=Xy7!kq9Lm",
        "MOT DE PASSE : Xy7!kq9Lm",
        "SENHA: Xy7!kq9Lm",
        "ПАРОЛЬ: Xy7!kq9Lm",
        "Mot de passe\u{a0}: Xy7!kq9Lm",
        "mot de passe\u{202f}: Xy7!kq9Lm",
        "비밀번호: Xy7!kq9Lm",
        "비밀번호=Xy7!kq9Lm",
        "비밀번호는 Xy7!kq9Lm입니다",
        "새 비밀번호가 Xy7!kq9Lm 입니다",
        "wachtwoord: Xy7!kq9Lm",
        "mijn wachtwoord is Xy7!kq9Lm",
        "DB_KENNWORT=Xy7!kq9Lm",
        "db_contraseña=Xy7!kq9Lm",
        "APP_WACHTWOORD=Xy7!kq9Lm",
        "db_пароль=Xy7!kq9Lm",
        "DB_비밀번호=Xy7!kq9Lm",
        "export SMTP_PASSWORT_PROD=Xy7!kq9Lm",
    ] {
        assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
    }
    assert_clean(&[
        "mijn wachtwoord vergeten",
        "비밀번호를 재설정하는 방법",
        "비밀번호는 8자 이상이어야 합니다",
        "비밀번호는 SHA-256으로 암호화됩니다",
        "비밀번호가 틀렸습니다",
        "Mot de passe\u{a0}: oublié",
        "CONTRASEÑA: <tu contraseña>",
        "KENNWORTLÄNGE=12",
        "DB_KENNWORT_FILE=/run/secrets/db",
        "wachtwoordbeleid: sterk",
    ]);
}

/// The words for password of more languages, and those for token, secret key and private key,
/// are keys judged as the English word is: a random value is a secret, a sentence about one, a
/// stand-in, a path or a length is not.
#[test]
fn secret_words_of_more_languages_name_their_values() {
    for text in [
        "hasło: Xy7!kq9Lm",
        "HASŁO=Xy7!kq9Lm",
        "heslo: Xy7!kq9Lm",
        "jelszó = Xy7!kq9Lm",
        "lösenord: Xy7!kq9Lm",
        "passord: Xy7!kq9Lm",
        "adgangskode: Xy7!kq9Lm",
        "salasana: Xy7!kq9Lm",
        "şifre: Xy7!kq9Lm",
        "Şifre: Xy7!kq9Lm",
        "口令：Xy7!kq9Lm",
        "DB_HASŁO=Xy7!kq9Lm",
    ] {
        assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
    }
    let token = "r4Tq9ZkW2mXv7LpB8nYc3Hd";
    for text in [
        format!("令牌：{token}"),
        format!("访问令牌 = \"{token}\""),
        format!("我的令牌是 {token}，先别用"),
        format!("アクセストークン: {token}"),
        format!("トークンは {token} です"),
        format!("토큰: {token}"),
        format!("токен: {token}"),
        format!("Токен бота: {token}"),
        format!("API密钥：{token}"),
        format!("秘钥={token}"),
        format!("金鑰: {token}"),
        format!("シークレット: {token}"),
        format!("비밀키: {token}"),
        format!("私钥: \"{token}\""),
        format!("秘密鍵 = '{token}'"),
    ] {
        assert_eq!(spans(&text), [token], "{text}");
    }
    assert_clean(&[
        "Hasło musi mieć co najmniej 8 znaków",
        "lösenordet är för kort",
        "heslo: tajne",
        "Şifre: şifreniz",
        "令牌过期了怎么办？",
        "如何轮换密钥？密钥管理服务 (KMS) 的文档在哪里",
        "使用 JWT 令牌进行认证，令牌有效期为 3600 秒",
        "令牌桶算法的速率是 100/s",
        "トークンの有効期限はどこで設定しますか",
        "토큰이 만료되었습니다. 어떻게 갱신하나요?",
        "токен истёк, как обновить?",
        "密钥: <your-key>",
        "令牌: ${TOKEN}",
        "トークン: YOUR_TOKEN_HERE",
        "токен: <ваш токен>",
        "秘密鍵: ~/.ssh/id_rsa",
        "私钥文件: server.key",
        "密钥长度: 2048",
        "令牌类型: Bearer",
        "密钥: 请在控制台获取",
        "密钥ID: AKIAIOSFODNN7EXAMPLE",
        "密码=请检查",
        "令牌=请检查",
        "пароль: секрет",
        "export API_KEY=\"여기에_인증키\"",
        "token: \"请替换为你的令牌\"",
        "DB_PASSWORD=\"пароль_здесь\"",
        "password: \"비밀번호입력\"",
        "OPENAI_API_KEY=\"填入你的OpenAI密钥\"",
        "api_key = \"ваш_api_ключ\"",
        "API_KEY=你的key",
    ]);
    assert_eq!(spans("password: \"Zq8pLm密码\""), ["Zq8pLm密码"]);
    assert_eq!(spans("password: \"пароль123\""), ["пароль123"]);
    // A short ASCII run glued to the word continues its key; a long one is no key.
    for text in ["密码2=Xy7!kq9Lm", "пароль2=Xy7!kq9Lm"] {
        assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
    }
    assert_clean(&["密钥AES256GCMMODE加密", "用令牌abcdefghijklmnop调用"]);
}

/// A triple-quoted string closed on its line is a value like any quoted one; one that runs on
/// is a docstring or a block of text.
#[test]
fn triple_quoted_values_are_values() {
    for text in [
        r#"password = """Qm7vR2xLk9pZ4tW8""""#,
        "API_KEY = '''Qm7vR2xLk9pZ4tW8aB3c'''",
        r#"val token = """Qm7vR2xLk9pZ4tW8aB3c""".trimIndent()"#,
    ] {
        assert_eq!(spans(text).len(), 1, "{text}");
    }
    assert_clean(&[
        "password = \"\"\"\nQm7vR2xLk9pZ4tW8 is what the docs show\n\"\"\"",
        "def password():\n    \"\"\"Return the password.\"\"\"",
        r#"secret = """the secret is kept in vault""""#,
        r#"password = """""""#,
    ]);
}

/// An authentication scheme's name under a token's key says what kind of token it is; a
/// generated value there is still one.
#[test]
fn an_auth_scheme_name_is_no_token() {
    assert_clean(&[
        r#"token = "Bearer""#,
        r#"<Token expires="3600">Bearer</Token>"#,
        "<AccessToken type=\"jwt\">bearer</AccessToken>",
        r#"{"auth_token": "JWT"}"#,
        "api_secret: 'HMAC'",
    ]);
    for text in [
        r#"<Token expires="3600">Zq8pLm2xWv4Rt6Yk9Bn3</Token>"#,
        r#"token = "Bearer2x9Lq7Zk4Wm""#,
    ] {
        assert_eq!(spans(text).len(), 1, "{text}");
    }
}

/// A last segment of mask characters elides what stands before it, a vendor's prefix or an
/// app's own words (`tsn_live_xxx`, `sk-proj-XXX`); a generated value stays one.
#[test]
fn a_last_segment_of_mask_characters_is_an_elision() {
    assert_clean(&[
        r#"client = OpenAI(api_key="tsn_live_xxx", base_url=BASE)"#,
        "OPENAI_API_KEY=sk-proj-XXX",
        r#"secret = "myapp-prod-***""#,
        "use sk-proj-xxx here",
    ]);
    for text in [
        "OPENAI_API_KEY=sk-proj-Zq8pLm2xWv4Rt6Yk9Bn3aB",
        r#"api_key = "tsn_live_Zq8pLm2xWv4Rt6Yk""#,
        r#"password = "xxx-Zq8!pLm2""#,
    ] {
        assert_eq!(spans(text).len(), 1, "{text}");
    }
}

/// A count after a vendor's prefix under a key is typed, as it is alone (`sk-1234567890abcdef`
/// in a tutorial's `.env`); a generated body is a key.
#[test]
fn a_count_after_a_vendors_prefix_under_a_key_is_typed() {
    assert_clean(&[
        "API_KEY=sk-1234567890abcdef",
        "OPENAI_API_KEY='sk-0123456789abcdefgh'",
    ]);
    assert_eq!(spans("API_KEY=sk-9f8a7c6b5d4e3f2a").len(), 1);
}

/// Stand-ins written in Spanish, Portuguese, German, French, Italian or Dutch (`tu_clave_aqui`,
/// `sua_chave_api`, `dein-api-schluessel`, `mot_de_passe_ici`) are stand-ins as English ones are;
/// a generated part among the words is still a secret.
#[test]
fn stand_ins_in_other_languages_are_stand_ins() {
    assert_clean(&[
        r#"API_KEY="tu_clave_api_aqui""#,
        "API_KEY=SUA_CHAVE_API",
        r#"OPENAI_API_KEY="dein-api-schluessel""#,
        r#"api_key = "votre_cle_api""#,
        r#"password: "tu_contraseña""#,
        r#"DB_PASSWORD="mot_de_passe_ici""#,
        r#"token = "ihr-token-hier""#,
        r#"TOKEN="inserisci_il_tuo_token""#,
        r#"secret: "jouw-geheim-hier""#,
    ]);
    for text in [r#"API_KEY="tu_clave_Xq9LmPz2""#, r#"password: "Xq9LmTuPz""#] {
        assert_eq!(spans(text).len(), 1, "{text}");
    }
}

/// Tokens without a prefix of their own next to the word that names them: a `PAT` key, Render's
/// `rnd_` keys, a Telegram bot token glued to `bot` in its API URL.
#[test]
fn pat_keys_render_keys_and_telegram_urls_are_found() {
    for (text, secret) in [
        (
            "AZURE_DEVOPS_PAT=laygowxn7lzdwcw2fklp3uzukryx5qgdvjj2b6v6ppl7zlkvpsc4",
            "laygowxn7lzdwcw2fklp3uzukryx5qgdvjj2b6v6ppl7zlkvpsc4",
        ),
        (
            "azure_devops_pat: 4rd6x73hquzoqm63p3p25vsrcqf2xxeu6i5yjzgur2shznyrlr7x",
            "4rd6x73hquzoqm63p3p25vsrcqf2xxeu6i5yjzgur2shznyrlr7x",
        ),
        (
            "the render key is rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL",
            "rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL",
        ),
        (
            "curl https://api.telegram.org/bot7312345678:AAszJCy5YY3-1-_sAeHib8jz6jZfhY56y12/sendMessage",
            "7312345678:AAszJCy5YY3-1-_sAeHib8jz6jZfhY56y12",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text}");
    }
    assert_eq!(
        find_secret("RENDER_API_KEY=rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL rest"),
        Some(SecretKind::Assignment)
    );
    assert_clean(&[
        r#"_IPV4_PAT = r"(?:[0-9]{1,3}\.){3}[0-9]{1,3}""#,
        r#"_UNRESERVED_PAT = r"ABCDEFGHIJKLMNOPQRSTUVWXYZk7Qz2mWpijklmnopqrstuvwxyz0123456789._\-~""#,
        r#"date_pat = r"\d{4}-\d{2}-\d{2}""#,
        "echo \"$CR_PAT\" | docker login ghcr.io -u USERNAME --password-stdin",
        "path = pathlib.Path(pat)",
        "rnd_seed = 42",
        "rnd_generator_for_the_benchmark_suite",
        "https://api.telegram.org/bot<token>/sendMessage",
        "the robot12345678:AAH arm",
        // An alphabet has every letter once: high entropy, no randomness.
        r#"let pat = "k7Qz2mWpijklmnopqrstuvwxyz";"#,
        r#"ALPHABET_PAT = "ABCDEFGHIJKLMNOPQRSTUVWXYZk7Qz2mWpijklmnopqrstuvwxyz0123456789""#,
        "the api key is k7Qz2mWpijklmnopqrstuvwxyz0123456789",
    ]);
    assert_eq!(spans(r#"let pat = "qZ8mTk3LwP9xRv2N""#), ["qZ8mTk3LwP9xRv2N"]);
}

/// Withheld for nothing before: a cookie's attributes alone, a Kubernetes secret's name, and a
/// documented default where the password is the user again.
#[test]
fn cookie_attributes_secret_names_and_user_as_password_are_not_secrets() {
    assert_clean(&[
        "Set-Cookie: Path=/; HttpOnly; SameSite=Lax",
        r#"response.headers["Set-Cookie"] = "Path=/; HttpOnly; SameSite=Lax""#,
        "tls:\n  secret: tls-cert-2024",
        "amqp://guest:guest@localhost:5672/",
        "postgres://postgres:postgres@localhost/db",
        "curl -u admin:admin http://localhost:8080",
    ]);
    for text in [
        "Set-Cookie: __Host-session=Zq8pLm2xQ7; Path=/; Secure; HttpOnly",
        "secret: hunter-2",
        "secret: Zq8-pLm2x-Qw3",
        // A memorable password under a bare key is not an object's name.
        "secret: blue-river-42-sky",
        "app:\n  secret: blue-river-42-sky",
        "amqp://guest:Zq8pLm2x@rabbit:5672/",
        "curl -u admin:Zq8pLm2x http://localhost:8080",
    ] {
        assert_eq!(findings(text).len(), 1, "not detected: {text:?}");
    }
}

/// A short letters-only password counts where `key=value` is a literal (an env or properties
/// line, a shell assignment, a flag); in code, INI-style `key = value` and YAML the same word
/// is a variable or a setting's choice (`password = hashed`, `password: Bcrypt`), so it does
/// not, and stand-ins never do.
#[test]
fn short_letters_only_passwords_count_as_literals_only() {
    assert_kind(
        SecretKind::Assignment,
        &[
            "password=Rosebud",
            "export DB_PASSWORD=Rosebud",
            "spring.datasource.password=Rosebud",
            // Weak, but typed as the password: a literal, not a slot.
            "password=secret",
            "Password=myPassword;",
        ],
    );
    assert_kind(SecretKind::CommandLine, &["mysqldump --password Rosebud shop"]);
    assert_clean(&[
        "password=changeme",
        "password=password",
        "password=your_password",
        "password: required",
        "password = hashed",
    ]);
}

/// A weak literal where a password stands is the password (a config line's word, a URL's
/// userinfo, a credential class's argument); a name in code, the slot's own name and the user
/// again are not.
#[test]
fn weak_literals_in_a_passwords_place_count_and_references_do_not() {
    assert_kind(
        SecretKind::Assignment,
        &[
            "user = Aladdin\npassword = open_sesame",
            r#"sender.Credentials = new NetworkCredential("ops@example.com", "vzihlaquknriqlht");"#,
        ],
    );
    assert_kind(
        SecretKind::UrlCredentials,
        &[
            "postgresql://user:secret@localhost/db",
            "mysql://app:myPassword@db:3306/shop",
        ],
    );
    assert_clean(&[
        "password = new_password",
        "password = user_input",
        "payload = read_line()\npassword = payload",
        "password = none",
        "password = decoded;",
        "$password = goodspec;",
        "password_auth = disabled",
        "password_rotation = quarterly",
        "password_auth_method = kerberos",
        "password = enabled",
        "docker run -e POSTGRES_PASSWORD=test postgres:16",
        "postgresql://user:password@localhost/db",
        "mongodb://mongodb:mongodb@localhost:27017/db",
        r#"new NetworkCredential("svc", "password")"#,
    ]);
}

/// A value followed by a Korean or Japanese case particle is a means or an object, not the
/// password; a copula or the end after it still makes it one. A particle before a colon is a
/// mapping.
#[test]
fn cjk_case_particles_after_a_value_say_it_is_not_the_password() {
    assert_clean(&[
        "비밀번호는 AES256-GCM으로 암호화됩니다",
        "비밀번호는 Argon2id로 해시됩니다",
        "비밀번호는 Xk3mQ9zR2pLw7을 포함할 수 없습니다",
        "비밀번호는 KeyVault2에서 가져옵니다",
        "パスワードはAES256-GCMで暗号化されます",
        "パスワードはVault2を使って保存します",
    ]);
    for text in [
        "비밀번호는 Xk3mQ9zR2pLw7입니다",
        "비밀번호는 Xk3mQ9zR2pLw7",
        "パスワードはXk3mQ9zR2pLw7です",
        "パスワードはXk3mQ9zR2pLw7でした",
        "パスワードはXk3mQ9zR2pLw7。",
        "비밀번호는: Xk3mQ9zR2pLw7",
    ] {
        assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
    }
}

/// ldapsearch and slapcat print a password attribute's value in base64 after `::`.
#[test]
fn ldif_base64_password_values_are_found() {
    let b64 = "e1NTSEF9TGZ2OEhpblovRlN3aGYvd1FFZHIyUjdqU1EzTVZ2K2Y=";
    for text in [
        format!("userPassword:: {b64}"),
        format!("dn: uid=bob,ou=people,dc=example,dc=org\nuserPassword:: {b64}\nmail: bob@example.org"),
        format!("olcRootPW:: {b64}"),
    ] {
        assert_eq!(spans(&text), [b64], "{text}");
        assert_eq!(find_secret(&text), Some(SecretKind::Assignment), "{text}");
    }
    // A value wrapped onto continuation lines is redacted with them.
    let text = format!(
        "userPassword:: {}\n {}\nmail: bob@example.org",
        &b64[..30],
        &b64[30..]
    );
    let (redacted, _) = redact(&text);
    assert_eq!(
        redacted,
        "userPassword:: [REDACTED:assignment]\nmail: bob@example.org"
    );
    assert_clean(&[
        "description:: VGhpcyBpcyBhIGRlc2NyaXB0aW9u",
        "userPassword:: xxxxxxxxxxxx",
        "let h = password::hash(input);",
        "use crate::password::Hasher;",
    ]);
}

/// A command continued onto the next line (`\`, PowerShell's backtick, cmd's `^`) still names
/// the command on its next lines.
#[test]
fn keytool_passwords_on_continued_lines_are_found() {
    for (text, secret) in [
        (
            "keytool -genkey -keystore k.jks \\\n  -storepass Xk3mQ9zR2pLw7 \\\n  -keypass Zq8pLm2xQ",
            &["Xk3mQ9zR2pLw7", "Zq8pLm2xQ"][..],
        ),
        (
            "keytool \\\n  -list -keystore k.jks \\\n  -storepass hunterpass",
            &["hunterpass"],
        ),
        (
            "keytool -importkeystore `\r\n  -srcstorepass Xk3mQ9zR2pLw7 `\r\n  -destkeystore b.jks",
            &["Xk3mQ9zR2pLw7"],
        ),
        (
            "keytool -list ^\n  -storepass hunterpass ^\n  -v",
            &["hunterpass"],
        ),
    ] {
        assert_eq!(spans(text), secret, "{text}");
    }
    // A line that ends without a continuation ends the command.
    assert_clean(&["keytool -list -keystore k.jks\n-storepass Xk3mQ9zR2pLw7 goes on the next one"]);
}

/// Django's and Werkzeug's hash forms with a stand-in where the hash goes are not hashes;
/// Django's legacy salted SHA-1 and MD5 are.
#[test]
fn stand_in_django_hashes_are_clean_and_legacy_ones_are_found() {
    assert_clean(&[
        "pbkdf2_sha256$600000$salt$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "scrypt$dollars$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "md5$salt$00000000000000000000000000000000",
        "the legacy format is sha1$<salt>$<hash>",
    ]);
    for hash in [
        "sha1$Xk3mQ9zR$2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
        "md5$Xk3mQ9zR$9e107d9d372bb6826bd81d3542a419d6",
    ] {
        let text = format!("auth_user.password = {hash}");
        assert_eq!(spans(&text), [hash], "{text}");
        let text = format!("the row has {hash}, is it still read?");
        assert_eq!(spans(&text), [hash], "{text}");
        assert_eq!(find_secret(hash), Some(SecretKind::PasswordHash), "{hash}");
    }
}

/// An LDAP scheme before readable words of a hash's length is not a hash.
#[test]
fn ldap_schemes_before_words_are_not_hashes() {
    assert_clean(&[
        "{SSHA}ThisIsNotAHashJustSomeLongerText",
        "{SHA}ThisIsNotAHashJustSomeTextX",
        "{MD5}PlaceholderValueHere12==",
    ]);
    assert_kind(SecretKind::PasswordHash, &["{MD5}CY9rzUYh03PK3k6DJie09g=="]);
}

/// A foreign word for password before a `-` is not the compound's head: a policy, a length.
#[test]
fn foreign_hyphen_compounds_and_policies_are_not_keys() {
    assert_clean(&[
        "Die Passwort-Richtlinie ist NIST800-63b",
        "Die Passwort-Regel lautet NIST800-63b",
        "Die Passwort-Richtlinie ist NIST-800-63b-rev2",
        "Die Passwort-Richtlinie: NIST-800-63b-rev2",
        "het wachtwoord_beleid: NIST800-63b",
        "la contraseña_política: NIST800-63b",
        "비밀번호_정책: NIST800-63b",
    ]);
    for text in [
        "Das WLAN-Passwort ist Xk3mQ9zR2pLw7",
        "passwort-prod: Xk3mQ9zR2pLw7",
        "DB_KENNWORT=Xk3mQ9zR2pLw7",
    ] {
        assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
    }
}

/// No-break spaces after a colon are spaces: never part of a value or its span.
#[test]
fn no_break_spaces_after_a_colon_are_not_part_of_the_value() {
    assert_clean(&[
        "Mot de passe\u{a0}:\u{a0}oublié",
        "mot de passe\u{202f}:\u{202f}oublié ?",
    ]);
    for text in [
        "Mot de passe\u{a0}:\u{a0}Xk3mQ9zR2pLw7",
        "mot de passe\u{202f}:\u{202f}Xk3mQ9zR2pLw7",
        "password:\u{a0}Xk3mQ9zR2pLw7",
    ] {
        assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text:?}");
    }
}

/// Windows commands in capitals or with a tab, a digit after a foreign key word, and foreign
/// words as key segments in their own script.
#[test]
fn capitals_tabs_digits_and_foreign_segments_are_found() {
    for text in [
        "NET USE Z: \\\\srv\\share Xk3mQ9zR2pLw7",
        "NET USER bob Xk3mQ9zR2pLw7",
        "Net User bob Xk3mQ9zR2pLw7 /add",
        "net use\tZ: \\\\srv\\share Xk3mQ9zR2pLw7",
        "DB_KENNWORT2=Xk3mQ9zR2pLw7",
        "Пароль_БД=Xk3mQ9zR2pLw7",
        "비밀번호_확인: Xk3mQ9zR2pLw7",
        "비밀번호는: Xk3mQ9zR2pLw7",
    ] {
        assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
    }
    assert_clean(&[
        "NET USER bob /DELETE",
        "NET USE Z: /DELETE",
        "Net user growth was 12% this quarter",
        "Passwortänderung: Xk3mQ9zR2pLw7 ist alt",
    ]);
}

#[test]
fn any_assignment_or_argument_syntax_carries_a_secret_words_value() {
    for text in [
        "DB_PASSWORD ?= Xk9mQ2zLp4Rt",
        "API_TOKEN ::= Xk9mQ2zLp4Rt7Hw",
        "API_TOKEN :::= Xk9mQ2zLp4Rt7Hw",
        "$password .= \"Xk9mQ2zLp4Rt\";",
        "var dbPassword string = \"Xk9mQ2zLp4Rt\"",
        "const apiKey string = \"Xk9mQ2zLp4RtWq8e\"",
        "let password: &str = \"Xk9mQ2zLp4Rt\";",
        "val secretKey: String = \"Xk9mQ2zLp4RtWq8e\"",
        "config.put(\"password\", \"Xk9mQ2zLp4Rt\");",
        "set(\"api_key\", \"Xk9mQ2zLp4RtWq8eYt5u\")",
        "<password>Xk9mQ2zLp4Rt</password>",
        "[database]\npassword =\n    Xk9mQ2zLp4Rt",
        "twilio auth token - b156d7585e022bc2495105450aac4272",
        "password <- \"Xk9mQ2zLp4Rt\"",
        "if (apikey == \"m{{h}o)p${e]nob(ody[finds>-_$#thisone}}\") {",
        "sourcegraph: 9c3Fa81bD4e07aC2f5B96d1E8a3c0F7b2D4e6A91",
        "facebook 4718293640512837|Qm7vT2xLp9RkWc4ZyN8bHd3sFj6",
    ] {
        assert!(find_secret(text).is_some(), "not detected: {text:?}");
    }
    assert_clean(&[
        "var dbPassword string = os.Getenv(\"DB_PASSWORD\")",
        "let password: &str = \"\";",
        "password ?= $(DB_PASSWORD)",
        "config.put(\"password\", password);",
        "<password>${DB_PASSWORD}</password>",
        "curl -u \"${{ env.ELK_ID }}:${{ env.ELK_PASS }}\" https://elk.test",
        "keycloak realm public key: MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA7G3BRtoMRxoN1alJou8",
        "The publishable key pk_live_w1O4bH4mSLmepCUL09W35IOg is safe in the browser",
        "sumOfExposures = 3Kof2VffNQ0QgYIhXUPJosVlCaQKm2hfpWE6F1fT9YGY74blQBIPsrkCcf1TwKE5;",
        "password := \"somefakekey\"",
        "client_secret=bP88Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "oktaKey = 00000000000000000000000000000000000TUVWXYZ",
        "export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJzaWduSW5BZGRyZXNzIjoiaHR0cHM6...",
    ]);
}

/// Hand-made values count down or every other character as well as up: filler, not keys;
/// a prefix followed by one count alone is filler however short.
#[test]
fn counting_down_or_interleaved_is_hand_made() {
    assert_clean(&[
        "--set global.licenseKey=a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8NRAL",
        "--set chart.deployKey=px-dep-d4c3b2a1-f6e5-h8g7-j1i8-p5o0n5m3l2k1",
        "api_key = \"zyxwvutsrqponmlkjihgfedcba\"",
        "\"token1\": \"xoxp-1234567890\"",
    ]);
    assert_found(&[
        "api_key = \"k9Qm2Lx7Rv4Tz8Wp3Ny6Hb1Jd5Fs0Gc\"",
        "\"token\": \"xoxp-5028163947-7736201938475-Qm2Lx7Rv4Tz8Wp3Ny6Hb1Jd5\"",
    ]);
}

/// A table's column named by a weak word (`key`) holds a key when its cell looks generated;
/// a Go composite literal after a key is code.
#[test]
fn weak_table_columns_and_composite_literals() {
    let text = "| service | key | owner |\n|---|---|---|\n| wit | 1ZLU5OXGEYX56K3IOL1Z88Y5YU5CC1KK | ops |";
    assert_eq!(spans(text), ["1ZLU5OXGEYX56K3IOL1Z88Y5YU5CC1KK"], "{text}");
    assert_clean(&[
        "| name | key | note |\n|---|---|---|\n| retries | max_retries | how often |",
        "SecretParts:  map[string]string{\"key\": resMatch},",
        "Token: []byte{0x01, 0x02},",
    ]);
}

/// A key named in a name field has its value in the value field after it.
#[test]
fn a_name_fields_key_takes_the_value_fields_value() {
    for text in [
        "env:\n- name: DB_PASSWORD\n  value: Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        "{\"name\":\"API_TOKEN\",\"value\":\"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
        "{\"ParameterKey\": \"ApiSecret\", \"ParameterValue\": \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
        "Key: api_token, Value: Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        "variable \"db_password\" {\n  type    = string\n  default = \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"\n}",
    ] {
        assert_eq!(spans(text), ["Zk3n8QwL2xVb7Rt5Yp1Mc9Ds"], "{text}");
    }
    assert_clean(&[
        "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
        "{\"name\":\"API_TOKEN\",\"value\":\"${API_TOKEN}\"}",
        "- name: TOKEN_TTL\n  value: \"3600\"",
        "- name: SECRET_NAME\n  value: my-app-secret",
        "variable \"api_token\" {}\nvariable \"region\" {\n  default = \"eu-west-1b7\"\n}",
        "{\"name\":\"API_TOKEN\"}, {\"label\": \"x\", \"value\": \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
    ]);
}

/// A name/value pair written value first, numbered (`name2`/`value2`), or with a log line's
/// prefix (`app[311]:`) before each of its lines holds its value as a pair written name first
/// does; a value belongs to its own entry only.
#[test]
fn a_pair_written_value_first_or_numbered_holds_its_value() {
    for text in [
        "containers:\n  - value: Q7mZt2Rk9xWv4LpN8cYd3Hs6\n    name: SMTP_PASSWORD",
        "[{\"Value\": \"Q7mZt2Rk9xWv4LpN8cYd3Hs6\", \"Name\": \"smtp-password\"}]",
        "headers {\n  name2  = \"X-Api-Key\"\n  value2 = \"Q7mZt2Rk9xWv4LpN8cYd3Hs6\"\n}",
        "worker[311]: - name: SMTP_PASSWORD\nworker[311]:   value: Q7mZt2Rk9xWv4LpN8cYd3Hs6",
    ] {
        assert_eq!(spans(text), ["Q7mZt2Rk9xWv4LpN8cYd3Hs6"], "{text}");
    }
    assert_clean(&[
        "env:\n  - name: REGION\n    value: Q7mZt2Rk9xWv4LpN8cYd3Hs6\n  - name: SMTP_PASSWORD\n    valueFrom: vault",
        "[{\"name\": \"region\", \"value\": \"Q7mZt2Rk9xWv4LpN8cYd3Hs6\"}, {\"name\": \"smtp_password\"}]",
        "- value: Q7mZt2Rk9xWv4LpN8cYd3Hs6\n  name: build_label\n- name: SMTP_PASSWORD",
        "{\"value\": \"Q7mZt2Rk9xWv4LpN8cYd3Hs6\",\n\n \"name\": \"smtp_password\"}",
        "{\"value\": \"${SMTP_PASSWORD}\", \"name\": \"smtp_password\"}",
    ]);
}

/// An element's text on the line between its start and end tags is its value, the lines framed
/// alike (a log line's prefix, a notebook cell's JSON strings, a quote); a slot, a reference or
/// another element there is none.
#[test]
fn an_elements_text_on_its_own_line_between_framed_lines_is_its_value() {
    for text in [
        "I/Sync( 812): <authToken>\nI/Sync( 812):   Jq8vR2nX5tLm9KwC4zHp7Ye3\nI/Sync( 812): </authToken>",
        "{\"lines\": [\"<AuthToken>\\n\", \"  Jq8vR2nX5tLm9KwC4zHp7Ye3\\n\", \"</AuthToken>\"]}",
        "| <authToken>\n|     Jq8vR2nX5tLm9KwC4zHp7Ye3\n| </authToken>",
    ] {
        assert_eq!(spans(text), ["Jq8vR2nX5tLm9KwC4zHp7Ye3"], "{text}");
    }
    assert_clean(&[
        "I/Sync( 812): <authToken>\nI/Sync( 812):   ${SYNC_AUTH_TOKEN}\nI/Sync( 812): </authToken>",
        "<authToken>\n  <value>Jq8vR2nX5tLm9KwC4zHp7Ye3</value>\n</authToken>",
        "{\"lines\": [\"<AuthToken>\\n\", \"  read from the vault\\n\", \"</AuthToken>\"]}",
    ]);
}

/// The documentation marker spelt with a look-alike digit (`EXAMPL3`, `3XAMPLE`, `SAMP1E`) is the
/// marker: filler where the credential goes, under a provider's prefix or a key; a value that
/// holds no such spelling is no filler.
#[test]
fn the_documentation_marker_spelt_with_digits_is_filler() {
    assert_clean(&[
        "export AWS_ACCESS_KEY_ID=AKIAQ7TZ2WRN3XAMPLEK",
        "client_secret: \"Vq8Lm2Rt7Kx9EX4MPLEwZ4pHn6Yc3Bd5Fg\"",
        "api_key = \"Tq7Wm2Xr9Lk4Vn8Z5AMP1EcB3yHd6\"",
    ]);
    for (text, value) in [
        (
            "export AWS_ACCESS_KEY_ID=AKIAQ7TZ2WRN3XAMPQEK",
            "AKIAQ7TZ2WRN3XAMPQEK",
        ),
        (
            "client_secret: \"Vq8Lm2Rt7Kx9EX4MPwZ4pHn6Yc3Bd5Fg\"",
            "Vq8Lm2Rt7Kx9EX4MPwZ4pHn6Yc3Bd5Fg",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// A value spelling the key's words before its secret word (two or more) names what the secret
/// is for; one word, or a value with digits or mixed in, stays a literal.
#[test]
fn a_value_spelling_the_keys_other_words_names_the_slot() {
    assert_clean(&[
        "const BUILD_CACHE_UPLOAD_TOKEN = 'buildCacheUpload';",
        "\"queueWorkerSecret\": \"queue_worker\"",
    ]);
    for (text, value) in [
        ("const UPLOAD_TOKEN = 'uploadxyz';", "uploadxyz"),
        (
            "const BUILD_CACHE_UPLOAD_TOKEN = 'buildCacheUpload9';",
            "buildCacheUpload9",
        ),
        (
            "\"queueWorkerSecret\": \"queue_worker_Zq7rT2\"",
            "queue_worker_Zq7rT2",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// A key that is a file's name (`deploy-secret.yml:` in a log line) is followed by the file's
/// content or a message: a secret there only when it looks generated.
#[test]
fn a_file_names_key_holds_only_a_generated_value() {
    assert_clean(&[
        "worker 12 loading deploy-secret.yml: retry2 = {}",
        "parse failed in app_secrets.json: line3",
    ]);
    for (text, value) in [
        (
            "data:\n  app_secrets.json: Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
            "Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        ),
        ("deploy_secret: retry2x", "retry2x"),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// A translation's message under a key naming it a message about the secret (`invalid_…`,
/// `send…`, `wrong…`) is no passphrase, in any language; the same words under a key naming the
/// secret itself are one.
#[test]
fn a_phrase_under_a_message_key_is_no_passphrase() {
    assert_clean(&[
        "\"invalidClientSecret\": \"Ogiltig klienthemlighet angiven\",",
        "\"resend_verification_token\": \"Skicka koden igen\"",
        "WRONG_API_KEY=\"Fel nyckel angiven nu\"",
    ]);
    for (text, value) in [
        (
            "\"pin_passphrase\": \"Ogiltig pinkod angiven\",",
            "Ogiltig pinkod angiven",
        ),
        (
            "\"verification_passphrase\": \"Skicka koden igen\"",
            "Skicka koden igen",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// A quoted constant's name holding a secret word and another word names a secret (an
/// environment variable, a check's id); capitals with no such segments, or mixed with small
/// letters, stay a literal.
#[test]
fn a_quoted_constant_name_with_a_secret_word_names_a_secret() {
    assert_clean(&["token = 'GITLAB_DEPLOY_TOKEN'", "{\"api_key\": \"MAPS_API_KEY\"}"]);
    for (text, value) in [
        ("token = 'GITLABDEPLOYTOKEN'", "GITLABDEPLOYTOKEN"),
        ("{\"api_key\": \"MAPS_API_KEY_x7Qz\"}", "MAPS_API_KEY_x7Qz"),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// German's word for key and French's for token name the random value after them in a sentence,
/// as `key` and `token` do in English; the same words about a lock, a table or an expiry do not.
#[test]
fn key_in_german_and_token_in_french_name_a_random_value() {
    for (text, value) in [
        (
            "Hier ist mein Schlüssel Wq8vNt3pXz6LmR2kBy7Hc4Jd, bitte testen",
            "Wq8vNt3pXz6LmR2kBy7Hc4Jd",
        ),
        (
            "Mon jeton Wq8vNt3pXz6LmR2kBy7Hc4Jd ne passe plus",
            "Wq8vNt3pXz6LmR2kBy7Hc4Jd",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
    assert_clean(&[
        "Den Schlüssel für den Keller hat Jonas, er kommt um 18 Uhr.",
        "Der Fremdschlüssel zeigt auf orders.customer_id.",
        "Le jeton de rafraîchissement expire au bout de 30 jours.",
    ]);
}

/// A constant's name with a secret word and a numbered last segment (a check's or a rule's id,
/// `VAULT_SECRET_12`) names a secret under any key, a spaced label's too; letters after the
/// number or small letters make it a literal again.
#[test]
fn a_numbered_constant_name_under_a_label_names_a_secret() {
    assert_clean(&[
        "'Deploy Key': 'ACME_TOKEN_3',",
        "rules = {'Vault secret': 'VAULT_SECRET_12'}",
    ]);
    for (text, value) in [
        ("'Deploy Key': 'ACME_TOKEN_3x9Q',", "ACME_TOKEN_3x9Q"),
        ("secret: 'Vault_Secret_12'", "Vault_Secret_12"),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
}

/// A generated token on a line that speaks of a key with no syntax between them is found;
/// digests, ids, public keys and words on such lines are not.
#[test]
fn a_generated_token_on_a_line_about_a_key() {
    for (text, token) in [
        (
            "the new one for oopspam is a9PxCUoI7bCKQogm47qpznV3hu49kO0Qduc4025t, does the SDK cache the old key?",
            "a9PxCUoI7bCKQogm47qpznV3hu49kO0Qduc4025t",
        ),
        (
            "rotated the token yesterday: xyclb6zdiq9hyexe74ah4lvp3ea02sbv works now",
            "xyclb6zdiq9hyexe74ah4lvp3ea02sbv",
        ),
        (
            "heads up: the staging creds are kARx6uGgPqBkho0jzPNfgnAduN3hDjBY until Friday",
            "kARx6uGgPqBkho0jzPNfgnAduN3hDjBY",
        ),
    ] {
        assert_eq!(spans(text), [token], "{text}");
    }
    assert_clean(&[
        "the token refresh was fixed in 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39, see the key rotation doc",
        "key id 550e8400-e29b-41d4-a716-446655440000 belongs to the staging tenant",
        "The token endpoint returns 400 for request 01HZX3K9N4QW7E2R5T8Y6U1I0P, see the trace",
        "token refresh failed for trace-id 4bf92f3577b34da6a3ce929d0e0e4736 twice",
        "add this public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
        "the token lives in https://vault.example.com/v1/secret/data/Xk9mQ2zR7pLw4vBn8cTy",
        "the key is generated by createHmacSha256SigningKeyFromSecretMaterial in the SDK",
        "the sha256 of the token bundle is 9b74c9897bac770ffc029102a200c5de0a1b2c3d4e5f60718293a4b5c6d7e8f9",
    ]);
}

/// A provider's word glued to its value by a dash names it as a separator would; a slug or
/// a hex build suffix does not.
#[test]
fn a_provider_word_glued_by_a_dash() {
    let text = "see abyssale-ffCQRQ5V0FxJOZTOWs5iXCfRP15Ea8s6YchSx9KY in the log";
    assert_eq!(
        spans(text),
        ["ffCQRQ5V0FxJOZTOWs5iXCfRP15Ea8s6YchSx9KY"],
        "{text}"
    );
    assert_clean(&[
        "abyssale-docs-for-the-v2-api-released",
        "the image adobe-4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f is stale",
    ]);
}

/// A strong key's long run of digits is its secret; a count or a timestamp's key is no key.
#[test]
fn a_strong_keys_long_digits_are_a_secret() {
    assert_eq!(
        spans("secret = \"9734741337193905126710251\""),
        ["9734741337193905126710251"]
    );
    assert_clean(&[
        "token_expiry = 1700000000000000000",
        "max_tokens = 1000000000000000000",
    ]);
}

#[test]
fn a_weak_keys_identifier_or_key_path_is_a_name() {
    assert_clean(&[
        "cache key: user:1234:profile:v2",
        "redis key: session:9f3a2b:cart",
        "key: someVeryLongCamelCaseIdentifierName",
        "key: SomeConfigurationValueForTheService",
        "hash key: userIdTimestampComposite",
        "key: tenant/42/settings/theme",
        "the memcached key: catalog:item:88231:price",
        "partition key: orders#2024-05#eu-west",
        "sort key: createdAt#order:7731",
        r#"redis key = "rate_limit:api:203.0.113.7:minute""#,
        "key: ShoppingCartCheckoutSessionState",
        "primary key: OrderLineItemIdentifier",
    ]);
    // Generated, however it is written, it is still a key.
    assert_eq!(
        spans("key: Xk9mQ2zLp4RtWq8eYt5u7vB3nM6c"),
        ["Xk9mQ2zLp4RtWq8eYt5u7vB3nM6c"]
    );
    assert_eq!(
        spans("cache key: Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"),
        ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"]
    );
    assert_eq!(
        spans("key: abc:Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"),
        ["abc:Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"]
    );
    assert!(find_secret("key: hTqPwZmXvKcRbNfLgYdJsAeUoWiQ").is_some());
}

#[test]
fn a_cookies_plain_value_is_a_setting_and_a_generated_one_a_session() {
    assert_clean(&[
        "Set-Cookie: lang=en-US; Path=/",
        "cookie: consent=accepted",
        "Set-Cookie: theme=dark; Path=/; SameSite=Lax",
        "Set-Cookie: locale=fr-FR; Path=/; Secure",
        "Cookie: currency=EUR",
        "set-cookie: sidebar=collapsed; Max-Age=31536000",
        "Cookie: tz=Europe/Berlin",
        "request had Cookie: view=grid; density=compact",
        r#"document.cookie = "theme=dark; path=/";"#,
        r#""cookie": "lang=en-US; consent=yes""#,
        "curl -b 'lang=en; theme=dark' https://example.com",
        "curl -b cookies.txt https://example.com",
    ]);
    assert_eq!(
        spans(r#"curl -s -b "sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; lang=en" https://example.com"#),
        ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
    );
    assert!(find_secret(r#""cookie": "lang=en-US; session=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1""#).is_some());
    assert_eq!(
        spans(r#"requests.get(url, cookies={"lang": "en", "session": "Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"})"#),
        ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
    );
    assert_clean(&[
        r#"requests.get(url, cookies={"lang": "en-US", "theme": "dark"})"#,
        r#"cookies = {"session": session_id}"#,
    ]);
    assert!(find_secret("Cookie: sessionid=q8f3kz0v9w2mx7pl4rt6yb1nc5").is_some());
    assert!(find_secret("Set-Cookie: PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3; path=/").is_some());
    assert!(
            find_secret(
                "Set-Cookie: connect.sid=s%3AqW9xL2mT8vR4nK7pZ1cY5bH3.Fj6dG0sA9eU2iO8wQ4rT7yN1mK5lP3; Path=/; HttpOnly"
            )
            .is_some()
        );
    // A session among plain cookies is found, and only it is redacted.
    assert_eq!(
        spans("Cookie: theme=dark; session=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; lang=de"),
        ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
    );
}

#[test]
fn a_cookie_line_over_4_kb_or_ending_in_blanks_before_its_quote_does_not_panic() {
    // A `Cookie:` line longer than the 4 KB window, a map opened on it.
    assert_eq!(find_secret(&format!("Cookie: {{{}", "x".repeat(4100))), None);
    assert_eq!(find_secret(&format!("Cookie: a=b; {}", "x".repeat(4100))), None);
    // A session at the head of a long line is still read.
    assert!(
        find_secret(&format!(
            "Cookie: theme=dark; sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; {}",
            "x ".repeat(2100)
        ))
        .is_some()
    );
    // A quoted cookie argument whose last pair is followed by blanks before its quote.
    assert_eq!(
        spans("curl -b 'sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; ' https://example.com"),
        ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
    );
    assert_clean(&["curl -b ' ' x", r#"curl -b "a=b; " x"#, "curl -b ''"]);
}

#[test]
fn a_vendors_documented_emulator_and_example_keys_are_no_secret() {
    const AZURITE: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    assert_clean(&[
        &format!("AccountName=devstoreaccount1;AccountKey={AZURITE}"),
        &format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
        ),
        &format!("AZURE_STORAGE_KEY={AZURITE}"),
        &format!(r#"azurite account key is "{AZURITE}""#),
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    ]);
    // One character off, or another account's key, is a key like any other.
    let changed = AZURITE.replace("GMGw==", "GMGx==");
    assert!(find_secret(&format!("AccountKey={changed}")).is_some());
    assert!(
            find_secret(
                "AccountName=prod;AccountKey=Qm7vT2xL9pR4wK8zN3cY6bH1fJ5dG0sA9eU2iO8wQ4rT7yN1mK5lP3zX6cV0bB9qW2eR4tY6uI8oP0aS1dF3gH5jK7lZ9xC=="
            )
            .is_some()
        );
}

#[test]
fn random_mixed_case_letters_are_a_password_and_words_run_together_are_names() {
    for text in [
        r#"config.setPassword("ImOIVBfPhQYm");"#,
        r#"conn.set_password("ImOIVBfPhQYm")"#,
        r#"props.put("password", "ImOIVBfPhQYm");"#,
        r#"System.setProperty("javax.net.ssl.keyStorePassword", "ImOIVBfPhQYm");"#,
        r#"auth = HTTPBasicAuth("deploy", "ImOIVBfPhQYm")"#,
        r#"ds.setPassword("qWeRtYzXmKpL");"#,
        r#"client.set_password("TbHvQkRmWxZn")"#,
        r#"settings.put("db.password", "GhJkLzXcVbNm");"#,
        r#"requests.get(url, auth=HTTPBasicAuth("svc", "PqRsTuVwXyZa"))"#,
        r#"props.setProperty("mail.smtp.password", "NdFgHjKlQwEr");"#,
    ] {
        let value = text.split('"').rev().nth(1).unwrap();
        assert_eq!(spans(text), [value], "{text}");
    }
    assert_clean(&[
        "config.setPassword(password);",
        "config.setPassword(getPassword());",
        r#"props.put("password", pwd);"#,
        r#"props.setProperty("password", "PasswordField");"#,
        r#"builder.setPassword("DefaultPassword")"#,
        r#"settings.put("db.password", "ChangeMePlease");"#,
        r#"auth = HTTPBasicAuth("deploy", "XMLHttpRequest")"#,
        // Unquoted in code, a name code goes on after or uses again is a variable.
        "password = rndPwdStr;",
        "password = rndPwdStr\nconnect(user, rndPwdStr)",
    ]);
    assert_eq!(spans("password: KqWzRtYhNbVm"), ["KqWzRtYhNbVm"]);
}

#[test]
fn a_letters_only_password_in_prose_or_piped_to_a_login_is_found() {
    assert_eq!(
        spans("the staging db password is ImOIVBfPhQYm, can you connect?"),
        ["ImOIVBfPhQYm"]
    );
    assert_eq!(
        spans("the prod redis password is TbHvQkRmWxZn, rotate it tomorrow"),
        ["TbHvQkRmWxZn"]
    );
    assert_eq!(spans("密码：ImOIVBfPhQYm"), ["ImOIVBfPhQYm"]);
    assert_eq!(spans("密码: qWeRtYzXmKpL"), ["qWeRtYzXmKpL"]);
    assert_eq!(
        spans(r#"echo "Xk29fLmQp3" | docker login --username deploy --password-stdin"#),
        ["Xk29fLmQp3"]
    );
    assert_eq!(
        spans("echo 'Qm7vT2xL9p' | docker login ghcr.io -u bot --password-stdin"),
        ["Qm7vT2xL9p"]
    );
    assert_eq!(
        spans(r#"printf '%s' "Zr8Qm2Lx9Tp4" | podman login --username ci --password-stdin quay.io"#),
        ["Zr8Qm2Lx9Tp4"]
    );
    assert_eq!(
        spans(r#"docker login -u ci --password-stdin <<< "Hq7vLm2Rx9""#),
        ["Hq7vLm2Rx9"]
    );
    assert_eq!(
        spans(r#"ConvertTo-SecureString "Xk29fLmQp3" -AsPlainText -Force"#),
        ["Xk29fLmQp3"]
    );
    assert_eq!(
        spans("$secure = ConvertTo-SecureString 'Hq7!vLm2Rx' -AsPlainText -Force"),
        ["Hq7!vLm2Rx"]
    );
    assert_eq!(
        spans(r#"convertto-securestring -String "Pw9zKq4Lx2" -AsPlainText -Force"#),
        ["Pw9zKq4Lx2"]
    );
    assert_eq!(
        spans("$ echo KqWzRtYhNbVm | sudo -S systemctl restart nginx"),
        ["KqWzRtYhNbVm"]
    );
    assert_eq!(
        spans(r#"echo "Hq7vLm2Rx9" | passwd --stdin deploy"#),
        ["Hq7vLm2Rx9"]
    );
    assert_clean(&[
        "echo $PW | sudo -S true",
        "cat pw.txt | sudo -S ls",
        r#"echo "Hq7vLm2Rx9" | ssh -S /tmp/sock host"#,
        r#"echo "$REGISTRY_TOKEN" | docker login ghcr.io -u bot --password-stdin"#,
        "cat token.txt | docker login --username deploy --password-stdin",
        "aws ecr get-login-password | docker login --username AWS --password-stdin 1234.dkr.ecr.aws",
        "ConvertTo-SecureString $plain -AsPlainText -Force",
        "ConvertTo-SecureString -String $env:DB_PASS -AsPlainText -Force",
        "ConvertTo-SecureString (Get-Content .\\pw.txt) -AsPlainText -Force",
        // An encrypted standard string (without `-AsPlainText` a literal should be one).
        r#"ConvertTo-SecureString "76492d1116743f0423413b16050a5345MgB8AGoAUQBkAHYAVwBjAGQA""#,
        "the prod redis password is RotatedWeekly, ask ops",
        r#"echo "Xk29fLmQp3" | grep Xk"#,
    ]);
}

#[test]
fn a_digest_after_a_bare_key_word_is_an_entry_and_after_a_qualified_one_a_key() {
    assert_found(&[
        "master key: 4b9e07c2d15a8f36e7019bd42c5fa863",
        "encryption key: 9d2c4f71a08e3b56c7e1904fd2b8a635",
        "signing key = 0f7a3e91c52bd6480e1f7c93a25bd064",
        "private key: c81f04a9e7d23b65f0a19c4e8d72b360",
        "secret key: 6e0b9d3a7f12c845e9d03a6b1f7c2e48",
        "Ocp-Apim-Subscription-Key: 06b2852c5de0abe82ca2121c21140e91",
        "the lemlist key 24203d9f149dd02d1d944ee799cfb57e stopped working",
    ]);
    assert_clean(&[
        "cache key: 4b9e07c2d15a8f36e7019bd42c5fa863",
        "key: 9d2c4f71a08e3b56c7e1904fd2b8a635",
        "md5 key: 0f7a3e91c52bd6480e1f7c93a25bd064",
        "etag key c81f04a9e7d23b65f0a19c4e8d72b360",
        "object key: 6e0b9d3a7f12c845e9d03a6b1f7c2e48",
        "cache_key = 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
    ]);
}

#[test]
fn a_base64_key_may_start_with_a_plus() {
    assert_eq!(
        spans(
            "AccountName=prod;AccountKey=+grqXYZ40BXQaeH9aAJ0M1M++388u7C3e+s8BvfGGMl5CoO/Iqqz1hJVRrzam/WWLKFoGQFvFmLKe0/X4ageHo==;EndpointSuffix=core.windows.net"
        ),
        ["+grqXYZ40BXQaeH9aAJ0M1M++388u7C3e+s8BvfGGMl5CoO/Iqqz1hJVRrzam/WWLKFoGQFvFmLKe0/X4ageHo=="]
    );
    assert_eq!(
        spans("DB_PASSWORD=+Vq9LmZ2xR7tK4wP8nB3"),
        ["+Vq9LmZ2xR7tK4wP8nB3"]
    );
    assert_clean(&[
        "var q = 'password = '+password;",
        r#"msg = "token: "+tokenValue2"#,
    ]);
}

/// A run of random letters joined to a word by `_` or `-` is a generated value after a strong
/// key, where a name of words joined so is code.
#[test]
fn random_letters_joined_to_a_word_are_a_value_and_joined_words_are_a_name() {
    assert_found(&[
        "api_token: hTqWmZpLxRvK_staging",
        "  SERVICE_SECRET: live-QmXvTbKzRwYp",
    ]);
    assert_clean(&[
        "api_token: readTokenFrom_vault",
        "  SERVICE_SECRET: XMLHttpRequest_polyfill",
    ]);
}

/// A tool's name in capitals glued to `KEY` ends an environment variable naming its key; an
/// English word ending in those letters names none.
#[test]
fn a_name_in_capitals_glued_to_key_names_a_key() {
    assert_found(&[
        "STRIPEKEY=Vb8nQ2xLm4Rt7Wz9Kp3s",
        "  environment:\n    - MAPBOXKEY=Jd4kR8wQz2Xn6Lp9Tv3c",
    ]);
    assert_clean(&[
        "HOTKEY=Vb8nQ2xLm4Rt7Wz9Kp3s",
        "TURKEY=Jd4kR8wQz2Xn6Lp9Tv3c",
        "STRIPEKEY=stripe_key_here",
    ]);
}

/// The accounts' names default installs use as their password (`root`, `admin`, `toor`) are a
/// password on a YAML line of their own, a comment after them or a diff's `+` before; another
/// short word there names a setting's choice.
#[test]
fn a_default_install_password_in_yaml_is_a_password_and_a_short_choice_is_not() {
    assert_found(&[
        "  password: toor  # lab box",
        "+    MasterPassword: admin",
        "db:\n  password: root\n  port: 5432",
    ]);
    assert_clean(&[
        "  password: auto",
        "  password: prompt  # asked at boot",
        "+  user: root",
        "db:\n  password: native\n  port: 5432",
    ]);
}

/// One group three times with the rest typed from its characters is filler, a vendor's prefix
/// before it or not; ids repeated before a random secret leave the secret a secret.
#[test]
fn a_group_typed_three_times_is_filler_and_a_random_tail_after_it_is_not() {
    assert_clean(&[
        "token = \"Rt7-Rt7-Rt7-7tR\"",
        "slack: xoxb-5550101-5550101-5550101-1010555",
    ]);
    assert_found(&[
        "token = \"Rt7-Rt7-Rt7-Lm3Qp8Vz2RwKx\"",
        "api_token: 4417-4417-4417-Tq8mZ3vX9kLp2wRb",
    ]);
}

/// A host's address, then a user and its password in parentheses, is a box's login as notes
/// write it; an interface and a word there, or a port, are not.
#[test]
fn a_host_then_user_slash_password_in_parentheses_is_a_login() {
    assert_found(&[
        "staging db 10.20.3.41 (deploy/Tq7vLm2Xk9)",
        "- 172.16.0.9(ops/Rw4zKp8Qn3,backup/Hj6Vx2Lm9q)",
    ]);
    assert_clean(&[
        "route via 10.20.3.41 (eth0/Gateway)",
        "- 172.16.0.9(tcp/5432) is the primary",
        "version 1.2.3.4 (beta/rc)",
    ]);
}

/// A string broken over lines (a backslash ending its first, a triple quote running on) holds
/// its value's head on the first line; a docstring's words or a sentence continued so do not.
#[test]
fn a_string_continued_on_the_next_line_holds_its_head() {
    assert_found(&[
        "client_secret = 'Hb7qWm2ZxLp9TkR4vNc8\\\n    Yd3Fs6Jg'",
        "token = \"\"\"Qm3Lk8Zx2Vt7Rw9Pn4Hb6Jc\nDs5Fg1\"\"\"",
    ]);
    assert_clean(&[
        "token_help = 'Paste the token you were given \\\n    here'",
        "def token():\n    \"\"\"Returns the current token.\n    \"\"\"",
    ]);
}

/// An environment lookup assigned to a secret's variable: its literal default is that secret,
/// whatever name is looked up; an empty or stand-in default, or a lookup that is no environment's,
/// is none.
#[test]
fn an_env_lookups_default_assigned_to_a_secret_variable_is_the_secret() {
    assert_found(&[
        "api_secret = os.environ.get(\"ACME_LEGACY\", \"Vn4kQz8Lw2Rx7Tp\")",
        "if token := getenv(\"SVC_T\", \"Hq9Xw2Lm7Zk4Rt\"):",
    ]);
    assert_clean(&[
        "api_secret = os.environ.get(\"ACME_LEGACY\", \"\")",
        "api_secret = os.environ.get(\"ACME_LEGACY\", \"changeme\")",
        "api_secret = config.get(\"acme\", \"Vn4kQz8Lw2Rx7Tp\")",
    ]);
}

/// A generated value glued to a plural's colon (`tokens:Wq7#…`) is a secret, as after its `=`;
/// words, a version or a call glued so are not.
#[test]
fn a_generated_value_glued_to_a_plurals_colon_is_a_secret() {
    assert_found(&["tokens:Wq7#Lm2$Zx9", "service passwords:Kd8!vRq2Tz"]);
    assert_clean(&["tokens:per-user", "keys:v2.1-Beta", "passwords:Sha256(Salt)"]);
}

/// Mailgun's private API key of today's shape (32 hex, then two groups of eight) is its key
/// anywhere; typed filler of that shape, or a longer run of groups, is not.
#[test]
fn a_mailgun_key_of_three_hex_groups_is_found_and_filler_or_a_longer_run_is_not() {
    assert_kind(
        SecretKind::Vendor("mailgun_key"),
        &["the worker still sends with 7affd6683c03c241a167da374696712e-51b53422-b150d429 after rotation"],
    );
    assert_clean(&[
        "the worker still sends with 00000000000000000000000000000000-00000000-00000000 after rotation",
        "build 7affd6683c03c241a167da374696712e-51b53422-b150d429-0c1d is cached",
    ]);
}

/// Mailgun's older private keys are `key-` and 32 letters or digits of any case, not hex alone;
/// a name of words after `key-`, a word glued before it and Mailgun's documented example are not.
#[test]
fn a_mailgun_key_of_any_letters_is_found_and_words_or_the_documented_example_are_not() {
    assert_kind(
        SecretKind::Vendor("mailgun_key"),
        &[
            "worker log: signing with key-Tq7vR2mXw9Lp4ZkB8nYc3HdF6sJg1QaE failed (403)",
            "the relay still signs with key-m4x9q2vt7kz1bp8wr3ny6hc5jd0fls2e after rotation",
        ],
    );
    assert_clean(&[
        "renamed the setting to key-theSettingNameWeUseForOldRelayHosts",
        "donkey-Tq7vR2mXw9Lp4ZkB8nYc3HdF6sJg1QaE is the build's artifact name",
        "their quickstart shows key-3ax6xnjp29jd6fds4gc373sgvjxteol0 as the sample",
    ]);
}

/// An API key's id (`apikeyid`, `API_KEY_ID`, `apiKeyId`) holds a generated value as the key
/// itself (IBM Cloud's service credentials name their key so), as a secret's id does; a count or
/// a name of words under it stay an id.
#[test]
fn an_api_key_id_holds_a_generated_key_but_not_a_name_or_a_uuid() {
    assert_found(&[
        "[service.credentials]\napikeyid = Wb3-Kq9ZtR_mx7LpV2nYc8HdF4sJg6QaE1uTo5Xi0Ny",
        "- API_KEY_ID: \"pZ8vN3qL7xWk2RmT9bYc\"",
    ]);
    assert_clean(&[
        "[service.credentials]\napikeyid = 1842",
        "- apiKeyId: \"billing-export-reader\"",
    ]);
}

/// Outside a query, `&name=` inside a password is its symbols when what follows is no form
/// field's value (a symbol a form encoder would escape); in a query, or before a field's plain
/// value, the value still ends at the `&`.
#[test]
fn an_ampersand_field_in_a_password_is_its_symbols_unless_a_query_surrounds_it() {
    assert_spans(&[
        ("smtp_pass=Zr8&mq=Yt2^Lw5#", "Zr8&mq=Yt2^Lw5#"),
        ("  bind_password: Pn6&x=Kd3~Vb9*", "Pn6&x=Kd3~Vb9*"),
        (
            "GET /login?user=ana&pwd=Rt5Yq8Wz2&x=Kd3~Vb9 HTTP/1.1",
            "Rt5Yq8Wz2",
        ),
        ("secret=Hq8Zt3Wn6Lp1Vr5Kd7Xc&lang=de", "Hq8Zt3Wn6Lp1Vr5Kd7Xc"),
    ]);
}

/// `Basic` then `user:password` typed plain where its base64 goes (a header set by a call's
/// arguments, a template literal) holds the password; the user again, a template, filler or a
/// sentence's `Basic word:` holds none.
#[test]
fn a_plain_user_and_password_after_basic_is_found_but_not_a_template_or_filler() {
    assert_found(&[
        "req.set_header('Authorization', 'Basic deploy:Vx7#qLm2Rt')",
        "curl_setopt($ch, CURLOPT_HTTPHEADER, [\"Authorization: \" . \"Basic ci-bot:w8Tz2QpLk5Ny\"]);",
    ]);
    assert_clean(&[
        "req.set_header('Authorization', 'Basic deploy:deploy')",
        "req.set_header('Authorization', `Basic ${login}:${secret}`)",
        "req.set_header('Authorization', 'Basic deploy:zzzzzzzzzzzz')",
        "the Basic scheme:user:pass pair is base64-encoded before it is sent",
    ]);
}

/// A form body's field that holds a reference (`$BACKUP_PASS`, `${DB_PASSWORD}`) ends at the
/// next `&name=`: the fields after it are the body's, not a literal run on from the reference; a
/// literal there is still the password.
#[test]
fn a_reference_in_a_form_body_ends_at_the_next_field() {
    assert_clean(&[
        "wget --post-data \"passphrase=$BACKUP_PASS&mode=full\" https://backup.test/run",
        "form_body = 'db_password=${DB_PASSWORD}&retries=3'",
    ]);
    assert_spans(&[
        (
            "wget --post-data \"passphrase=Vz8#kQ2mTp&mode=full\" https://backup.test/run",
            "Vz8#kQ2mTp",
        ),
        ("form_body = 'db_password=Vz8~kQ2mTp&retries=3'", "Vz8~kQ2mTp"),
    ]);
}

/// A password's question (`passwordQuestion`, `recovery_password_question`) is the prompt shown
/// for recovery, its text a sentence, not the password; the password beside it still is one.
#[test]
fn a_password_question_is_no_password_but_the_password_beside_it_is() {
    assert_clean(&[
        "acct = Account(login=\"ops\", password_question=\"Favourite teacher\")",
        "<recoveryPasswordQuestion>Town of birth</recoveryPasswordQuestion>",
    ]);
    assert_found(&["acct = Account(password_question=\"Town of birth\", password=\"Gm4#tVq9Lx\")"]);
}

#[test]
fn camel_word_share_tells_random_letters_from_identifiers() {
    use crate::judge::random_letters;
    for random in ["ImOIVBfPhQYm", "qWeRtYzXmKpL", "TbHvQkRmWxZn", "hYtReWqAsDfG"] {
        assert!(random_letters(random.as_bytes()), "{random}");
    }
    for name in [
        "getUserName",
        "PasswordField",
        "XMLHttpRequest",
        "PostgreSQL",
        "phpMyAdmin",
        "KeePassXC",
        "MSAppHost",
        "userIdTimestampComposite",
        "JavaScript",
        "userPwdTxt",
        "cfgDbPwd",
        "rndPwdStrVal",
    ] {
        assert!(!random_letters(name.as_bytes()), "{name}");
    }
}

/// Counts end to end are filler however short, side by side or every other character; a
/// random value of that length, or one with a count only in part, is still a secret.
#[test]
fn short_counts_end_to_end_are_filler() {
    assert_clean(&[
        "myintervals_key = abcdef12345",
        "myintervals_token = z9y8x7w6v5u",
        "COINLIB_ACCESS_TOKEN=b1c2d3e4f5g6h7i8",
        "formcraft_key=1234567890abcdef",
        "ipinfo_secret key=abcdef12345678",
    ]);
    assert_found(&[
        "api_token = q7Wm2xR9kL4v",
        "api_key = \"Qz7pL2abcdefRw9\"",
        "password = abcdef9Qz!x",
    ]);
}

/// A run of one character is filler only where nothing generated comes before it: a key padded
/// out after 16 or more random characters is still a key, under a prefix or a key word.
#[test]
fn filler_only_in_part_is_no_filler() {
    assert_found(&[
        "stripe_key=sk_test_51H5Z3jGXvP5CVwYOLLllllllllllllllllllllllll",
        "why does sk_live_Qm7xR2vL9pW4kZ8nB3TtZZZZZZZZZZZZ fail?",
        "password = \"Xk9mQ2zLp7vR4wT8000000\"",
    ]);
    assert_clean(&[
        "sk_test_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "sk_live_51H5Zlllllllllllllllllllllllllllll",
        "ghp_abcdefghijklmnop000000000000000000000",
        "password = \"abcdefghijklmnopqr000000\"",
    ]);
}

/// A count typed in alternating case, the digits between its letters counting too, is filler
/// wherever it stands; one break in the alternation or in the count makes it a value again.
#[test]
fn counts_typed_in_alternating_case_are_filler() {
    assert_clean(&[
        "myregistry.azurecr.io password: A1bC2dE3fH4iJ5kL6mN7oP8qR9sT0u/+",
        "password: Q1rS2tU3vW4xY5zA6bC7dE8f",
        "client_secret = \"zY9xW8vU7tS6rQ5pO4nM3\"",
        "export DB_PASSWORD=aBcDeFgHiJkLmNoP",
    ]);
    assert_found(&[
        // Letters counting, digits not.
        "password: A7bC2dE9fH4iJ1kL6mN3oP8qR5sT0u/+",
        // Case not alternating (`bc`).
        "password: A1bc2dE3fH4iJ5kL6mN7oP8qR9sT0u",
        // A count interrupted by a pair (`Xy`), as in a value that only looks like a count.
        "AccountKey=Xy9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9uV8wX7yZ6aB5cD4eF3gH2iJ1kL0mN9oP8q==",
        "password: Xk9mQ2zLp7vR4wT8nB3hJ6cF",
    ]);
}

/// Base64 of filler (a sentence calling itself an example, counts end to end) is filler;
/// base64 of random bytes, or of structured text with a count in part, is still a secret.
#[test]
fn base64_of_filler_is_filler() {
    assert_clean(&[
        "instabot SECRET_KEY=Ym9va21hcmsgZXhhbXBsZSBpbnN0YWJvdCBrZXkgMDE=",
        "instabot TOKEN:VGhpcyBpcyBhbiBpbnN0YWJvdCBhcGkgdG9rZW4gZXhhbXBsZQ==",
        "reachmailSecret=YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY3ODkwQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo",
    ]);
    assert_found(&[
        "api_secret = \"q8Zr3mK1vX0pL7wN2cT5yB9dF4hJ6sA1\"",
        "api_secret = \"3q9vUQ8rS0kM1Hc2yZ7bN4xJ6wT5pL0d+fA9gR2eK8o=\"",
        "fullstory_key = \"dXNlcjp7Y29uZmlybWVkOnRydWUsImt1cmEiOiJlbGVuaXZlIERlZlo6ZGJ0OnRydWU9YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\"",
    ]);
}

/// The literal default of an environment lookup is the secret when the variable names one,
/// in every language's lookup; a stand-in default, or a variable that names no secret, is not.
#[test]
fn a_lookups_fallback_and_a_set_unless_set_literal_are_the_secret() {
    assert_found(&[
        "api_key = os.environ.get('API_KEY') or 'q9XbN2vLp7RzT4kW8mYc3dF'",
        "$token = getenv('GITLAB_TOKEN') ?: 'q9XbN2vLp7RzT4kW8mYc3dF';",
        "token = ENV['DEPLOY_TOKEN'] || 'q9XbN2vLp7RzT4kW8mYc3dF'",
        "secret = os.environ['SECRET_KEY'] or 'Vq7#mZ2pL9xKw'",
        "ENV['STRIPE_SECRET'] ||= 'q9XbN2vLp7RzT4kW8mYc3dF'",
        "@api_key ||= \"q9XbN2vLp7RzT4kW8mYc3dF\"",
        "config.password &&= 'Vq7#mZ2pL9xKw'",
    ]);
    assert_clean(&[
        "api_key = os.environ.get('API_KEY') or ''",
        "api_key = os.environ.get('API_KEY') or None",
        "token = ENV['TOKEN'] || 'changeme'",
        "token = ENV['TOKEN'] || default_token",
        "@token ||= fetch_token",
        "password ||= ENV['DB_PASSWORD']",
        "if password || token then retry end",
    ]);
}

#[test]
fn an_environment_lookups_literal_default_is_the_secret() {
    for (text, value) in [
        (
            "os.environ.get('DJANGO_SECRET_KEY','wwf*2#86t64!fgh6yav$aoeuo@u2o@fy&*gg76q!&%6x_wbduad')",
            "wwf*2#86t64!fgh6yav$aoeuo@u2o@fy&*gg76q!&%6x_wbduad",
        ),
        (
            "os.getenv(\"API_KEY\", \"Zq8pLm2xW7vR4tK9bN3c\")",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
        (
            "x = os.environ.get(\"X_TOKEN\", default=\"Zq8pLm2xW7vR4tK9bN3c\")",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
        (
            "foo(process.env.API_KEY || \"Zq8pLm2xW7vR4tK9bN3c\")",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
        (
            "foo(process.env.SECRET ?? 'Zq8pLm2xW7vR4tK9bN3c')",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
        (
            "psql -W ${DB_PASSWORD:-Zq8pLm2xW7vR4tK9bN3c}",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
        (
            "x = ENV.fetch(\"SECRET_KEY_BASE\") { \"Zq8pLm2xW7vR4tK9bN3cQ1\" }",
            "Zq8pLm2xW7vR4tK9bN3cQ1",
        ),
        (
            "x = System.getenv().getOrDefault(\"API_KEY\", \"Zq8pLm2xW7vR4tK9bN3c\");",
            "Zq8pLm2xW7vR4tK9bN3c",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
    assert_clean(&[
        "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', '')",
        "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', 'changeme')",
        "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', None)",
        "x = os.environ.get('SECRET_KEY', default=None)",
        "x = os.getenv('DB_PASSWORD', 'your-password-here')",
        "const password = process.env.FIREBASE_DEV_PASSWORD || \"not-set\"",
        "x = process.env.API_TOKEN || ''",
        "debug = os.environ.get('DEBUG_MODE', 'wwf*2#86t64!fgh6yav$aoeuo')",
        "psql -W ${DB_PASSWORD:-}",
    ]);
}

/// A provider's two-letter abbreviation glued to a credential word and a value names the
/// provider (`dd-apikey-…`, `dd_secret_key-…`); alone, or before any other word, it is text.
#[test]
fn a_providers_abbreviation_before_a_credential_word_names_it() {
    for (text, value) in [
        (
            "dd-apikey-dd52c29224affe29d163c6bf99e5c34f",
            "dd52c29224affe29d163c6bf99e5c34f",
        ),
        (
            "dd_secret_key-3c0c3965368a6b10f7640dbda46abfdca981c2d3",
            "3c0c3965368a6b10f7640dbda46abfdca981c2d3",
        ),
    ] {
        assert_eq!(spans(text), [value], "{text}");
    }
    assert_clean(&[
        "dd-trace-0e536995152fe074ce4b97c5d430cb39",
        "dd_build-75a693efd01bcc1fd177842cfc0add33cae7197f",
        "dd-mm-yyyy is the format, then dd if=/dev/zero of=disk.img bs=1M count=64",
        "dd: 3cbc7223133d327a52638de8947bd196",
    ]);
}

#[test]
fn an_identifier_of_abbreviated_words_is_a_name_not_a_password() {
    assert_clean(&[
        "const password = userPwdTxt",
        "password = cfgDbPwd",
        "password = rndPwdStrVal",
        "let secret = appCfgStr;",
    ]);
    // Random letters stay a password.
    assert!(find_secret("password = ImOIVBfPhQYm").is_some());
    assert!(find_secret("password = TbHvQkRmWxZn").is_some());
}

#[test]
fn a_quoted_replys_markers_leave_its_lines_as_they_were() {
    assert_found(&[
        "> SSHpassword=swordfish",
        "> > DB_PASSWORD=marmalade",
        "On Tue, ops wrote:\n> password: Tq7vLm2pZx\n\nthanks",
        ">\tpassword = open_sesame",
    ]);
    // A table, a CSV row and a REPL line read inside a quote as outside it.
    assert_found(&[
        "> | service | key | owner |\n> |---|---|---|\n> | numverify | aeo8h39fhjoa5txhrx633ad7t5ozankv | ops |",
        "> service,credential,owner\n> billing,gL1LKFp8p0q7ORUybiyovqIuGUsGjx4adxMRcHPh,team-a",
        ">>> api_key = \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"",
    ]);
    assert_clean(&[
        "> password=$DB_PASSWORD",
        "> the password field is required",
        "> password: ${{ secrets.DB }}",
        "> | service | key | owner |\n> |---|---|---|\n> | numverify | see the vault | ops |",
        "echo done\n> out.log",
    ]);
}

#[test]
fn a_redacted_key_passed_as_curls_user_is_found_no_more() {
    let text = "curl -u \"k7Qz2mWp9Lx!t:\" https://localhost:9200";
    let (redacted, kind) = redact(text);
    assert!(kind.is_some());
    assert_eq!(find_secret(&redacted), None, "{redacted}");
}

#[test]
fn curls_proxy_user_carries_the_proxys_password() {
    assert_eq!(
        spans("curl --proxy-user admin:Tq7vLm2pZx https://x.test"),
        ["Tq7vLm2pZx"]
    );
    assert_eq!(
        spans("curl -x http://proxy:3128 -U bob:Lm2p9Zx!q https://x.test"),
        ["Lm2p9Zx!q"]
    );
    assert_clean(&[
        "curl --proxy-user admin: https://x.test",
        "curl -U $PROXY_USER:$PROXY_PASS https://x.test",
        "curl --proxy-user \"${USER}:${PASS}\" https://x.test",
        "tar -U -xf archive.tar",
    ]);
}

#[test]
fn an_elements_closing_tag_ends_its_value() {
    assert_eq!(
        spans("<o3_db_password>Tq7vLm2pZx9</o3_db_password>"),
        ["Tq7vLm2pZx9"]
    );
    assert_clean(&[
        "<o3_variable_password>${password}</o3_variable_password>",
        "<db2_secret_key>%env(DB_SECRET)%</db2_secret_key>",
        "<svc9_api_token>{{ token }}</svc9_api_token>",
    ]);
}

#[test]
fn a_reference_cut_at_a_values_end_is_still_a_reference() {
    assert_clean(&[
        "04_variable_password: ${{password}}",
        "db_password: ${{ secrets.DB_PASSWORD }}",
    ]);
    assert!(find_secret("db_password: ${{x}}Tq7vLm2pZx").is_some());
}

#[test]
fn a_positional_format_slot_makes_a_template() {
    assert_clean(&[
        r#"format_password = "prefix_{}".format(dynamic_value1)"#,
        r#"secret_key = "key_{0}_{1}".format(a, b)"#,
    ]);
    assert!(find_secret(r#"password = "Tq7vLm2p{Zx9""#).is_some());
    assert!(find_secret(r#"password = "Tq7vLm2pZx9{12345}""#).is_some());
}

#[test]
fn a_quoted_call_without_arguments_is_code() {
    assert_clean(&[
        r#"variable_password8 = "obj.aFunctionCall()";"#,
        r#"const secret = 'config.getSecret()';"#,
    ]);
    assert!(find_secret(r#"password = "Tq7v(Lm2)pZx""#).is_some());
    assert!(find_secret(r#"password = "Tq7vLm2pZx9()!""#).is_some());
}

#[test]
fn githubs_prefixes_are_lowercase() {
    assert_clean(&[
        "name: GHP_THISISACONSTANTNAMEOFTHESAMELENGTHAS",
        "GHS_TOKENDOCUMENTATIONLINKTEXTPLACEHOLDERS1",
    ]);
    assert_eq!(
        spans("token ghp_nQcwYQyT2h5gMpngMc29Xzq2qL0aB7dE9kFz"),
        ["ghp_nQcwYQyT2h5gMpngMc29Xzq2qL0aB7dE9kFz"]
    );
}

#[test]
fn a_password_hash_that_says_it_is_made_up_is_a_stand_in() {
    assert_clean(&[
        "<passwordHash>#jbcrypt:$2a$10$fakefn2U3jfdByqbHc.fake9ejqu//fake9p8P222cdfwjdnMFdxS</passwordHash>",
    ]);
    assert!(find_secret("#jbcrypt:$2a$10$Qm7vXz2pLk9RtY4wNb8sUe1cJ6hGf3dA5iK0oP7lMnB2qW9xZvE4y").is_some());
}

#[test]
fn an_xml_entrys_name_element_names_its_value_elements_secret() {
    assert_found(&[
        "<entry>\n    <key>password</key>\n    <value>Tq7vLm2pZx</value>\n</entry>",
        "<item><name>db.password</name><value>hunter2-blue</value></item>",
        "<entry>\n  <key>api_token</key>\n  <value>Lm2pZx9Tq7vRk4Wb8Nc3</value>\n  <info>prod</info>\n</entry>",
    ]);
    assert_clean(&[
        "<entry>\n    <key>password</key>\n    <value></value>\n</entry>",
        "<entry>\n    <key>password</key>\n    <value>${DB_PASSWORD}</value>\n</entry>",
        "<entry>\n    <key>username</key>\n    <value>Tq7vLm2pZx</value>\n</entry>",
        "<entry><key>password_length</key><value>16</value></entry>",
        "<key>password</key>\n<other>x</other>\n<key>user</key>\n<value>alice</value>",
    ]);
}

#[test]
fn a_template_parameters_default_is_its_value() {
    assert_found(&[
        "Parameters:\n  DBPassword:\n    Description: Database password\n    Type: String\n    Default: Tq7vLm2pZx9",
        r#""MasterUserPassword": {"Type": "String", "NoEcho": true, "Default": "Lm2p9Zx!qTk4"}"#,
        "> AdminPassword:\n>   Type: String\n>   Default: 'Rk4Wb8Nc3Tq7'",
    ]);
    assert_clean(&[
        "DBPassword:\n  Type: String\n  NoEcho: true\nDBUser:\n  Default: Tq7vLm2pZx9",
        r#""DBPassword": {"Type": "String", "NoEcho": true}, "DBUser": {"Default": "Tq7vLm2pZx9"}"#,
        "DBPassword:\n  Type: String\n  Default: !Ref AdminPassword",
        "DBPassword:\n  Description: the default is set by the pipeline\n  Type: String",
    ]);
}

#[test]
fn an_accounts_word_glued_to_pass_names_its_password() {
    assert_found(&[
        "jdbc:mysql://localhost/authority?user=admin&userpass=hunter2x",
        "DBPASS=swordfish9",
        "rootPass: 'marmalade7'",
    ]);
    assert_clean(&[
        "bypass=marmalade",
        "compass=north",
        "surpass: expectations",
        "userpass=$USER_PASS",
        "mydbpass=true",
    ]);
}

#[test]
fn a_jwes_five_segments_are_a_token() {
    let jwe = "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGeipsEdY3mx_etLbbWSrFr05kLzcSr4qKAq7YN7e9jwQRb23nfa6c9d-StnImGyFDbSv04uVuxIp5Zms1gNxKKK2Da14B8S4rzVRltdYwam_lDp5XnZAYpQdb76FdIKLaVmqgfwX7XWRxv2322i-vDxRfqNzo_tETKzpVLzfiwQyeyPGLBIO56YJ7eObdv0je81860ppamavo35UgoRdbYaBcoh9QcfylQr66oc6vFWXRcZ_ZT2LawVCWTIy3brGPi6UklfCpIMfIjf7iGdXKHzg.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ";
    assert_eq!(
        spans(&format!("the gateway returned {jwe} as the session")),
        [jwe]
    );
    let direct =
        "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..q8Zk2vLm7TpX4wRb.Nc3Tq7vLm2pZx9Rk4Wb8Nc3T.Yp1Mc9Ds5Fh2Jk7L";
    assert_eq!(spans(&format!("cookie: {direct}")), [direct]);
    assert_clean(&[
        "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.abc.def",
        "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ is the header",
        "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..q8Zk.Nc3T.Yp1M",
    ]);
}

#[test]
fn a_diffs_first_column_and_a_line_number_gutter_are_layout() {
    assert_found(&[
        "```diff\n+| service | key | owner |\n+|---|---|---|\n+| numverify | aeo8h39fhjoa5txhrx633ad7t5ozankv | ops |\n```",
        "@@ -1,2 +1,3 @@\n user = Aladdin\n-password = hunter2\n+password = open_sesame",
        "error: invalid config\n 11 | [SupportSite]\n 12 | Username=thisismyunsername\n 13 | Password=Tq7vLm2pZx",
    ]);
    assert_clean(&[
        "error: invalid config\n 11 | -----BEGIN PRIVATE KEY-----\n 12 | xxx\n 13 | -----END PRIVATE KEY-----",
        "```diff\n-password = $OLD_PASSWORD\n+password = ${{ secrets.DB_PASSWORD }}\n```",
        "10 | 20 | 30 are the totals",
    ]);
}

#[test]
fn a_list_items_marker_is_layout() {
    assert_found(&[
        "Notes from the call:\n* user = Aladdin\n* password = open_sesame",
        "Steps:\n1. edit smtp.conf\n2. password = marmalade_sky",
        "* [SupportSite]\n* Username=thisismyunsername\n* Password=thisismypassword",
    ]);
    assert_clean(&[
        "* password = $DB_PASSWORD",
        "2. set the password in the vault",
        " * @param password the user's password",
    ]);
}

#[test]
fn a_single_quoted_document_is_read_unescaped() {
    // Python's repr of a prompt: `\n` breaks its lines, `\'` is its quote.
    assert_found(&[
        ">>> row\n'[billing]\\nsecret =\\n    Zx8Qw3Lm7Rt2Vk9Np4\\n'",
        ">>> row\n'It\\'s this one:\\ndb.internal:5432:prod:app:Vq3Lm8Zt2Rw9\\n'",
    ]);
    assert_clean(&[
        ">>> row\n'It\\'s this one:\\ndb.internal:5432:prod:app:*\\n'",
        "print('first line\\nsecond line\\ntoken refreshed at 10:42, it\\'s ok')",
        // An apostrophe opens no string.
        "don't split on '\\n' here, it's a Windows file with id 7f3a9c2e4b1d",
    ]);
}

#[test]
fn the_items_of_an_array_of_lines_are_one_document() {
    // A notebook's `source`: a table's header and its rows stand in separate items.
    assert_found(&[
        "{\"source\": [\n  \"service,credential,owner\\n\",\n  \"billing,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a\\n\",\n  \"which column?\"\n ]}",
        "{\"source\": [\"service,credential,owner\\n\", \"billing,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a\"]}",
    ]);
    assert_clean(&[
        "{\"source\": [\n  \"service,credential,owner\\n\",\n  \"billing,${BILLING_CREDENTIAL},team-a\\n\",\n  \"which column?\"\n ]}",
        "{\"ids\": [\"7f3a9c2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f\\n\", \"8c1f2e3d4a5b6c7d8e9f0a1b2c3d4e5f\"]}",
    ]);
}

#[test]
fn a_string_escaped_twice_is_read_twice_unescaped() {
    // A notebook's JSON quoted in a JSON log record.
    let inner = r#"{"level":"info","msg":"cell: {\"source\": [\"os.environ[\\\"SERVICE_TOKEN\\\"] = \\\"Hd83kfLq0Zp2Wm7Xv5Nc\\\"\\n\"]}"}"#;
    assert_eq!(spans(inner), ["Hd83kfLq0Zp2Wm7Xv5Nc"]);
    assert_clean(&[
        r#"{"level":"info","msg":"cell: {\"source\": [\"os.environ[\\\"SERVICE_TOKEN\\\"] = os.getenv(\\\"SERVICE_TOKEN\\\")\\n\"]}"}"#,
        r#"{"level":"debug","msg":"request 7f3a9c2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f done\nretries: 3\nsession id: 8c1f2e3d4a5b6c7d\npath: C:\\new\\tokens\n"}"#,
        r#"{"msg": "net use \\\\fs07.corp.example\\builds /user:CORP\\ci_agent"}"#,
    ]);
    // A path's escaped backslashes are read once: the share keeps its two.
    assert_found(&[r#"{"msg": "net use \\\\fs07.corp.example\\builds Qz7#vLm2Rt /user:CORP\\ci_agent"}"#]);
}

#[test]
fn a_sentence_may_end_where_a_statements_string_does() {
    assert_eq!(
        spans(r#"console.log("my password is Rw8LkQ3zTn");"#),
        ["Rw8LkQ3zTn"]
    );
    assert_clean(&[
        r#"console.log("my password is expired");"#,
        r#"log("my password is {}");"#,
    ]);
}

#[test]
fn a_comments_or_a_boxs_marker_is_layout() {
    assert_found(&[
        "# | service | key | owner |\n# |---|---|---|\n# | acme | Zx8Qw3Lm7Rt2Vk9Np4Hs6Jd1Fg5Yb0Cu | ops |",
        "-- service,credential,owner\n-- billing,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a",
        "│ service,credential,owner\n│ billing,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a",
    ]);
    // A reply quoted inside the comment: its `>` is layout too.
    assert_found(&["# On Monday, Ana wrote:\n# > [billing]\n# > secret =\n# >     Zx8Qw3Lm7Rt2Vk9Np4"]);
    assert_clean(&[
        "# On Monday, Ana wrote:\n# > <dict>\n# > \t<key>IDEShowPrebuildLogs</key>\n# > \t<true/>\n# > </dict>",
        "# On Monday, Ana wrote:\n# > [billing]\n# > secret =\n# >     ${BILLING_SECRET}",
        "# | service | key | owner |\n# |---|---|---|\n# | acme | $ACME_KEY | ops |",
        "// password = getenv(\"DB_PASSWORD\")\n// -- see the password policy\n# Password reset\n│ token: <redacted>",
    ]);
}

#[test]
fn a_log_lines_time_level_and_logger_are_layout() {
    assert_found(&[
        "2026-12-07 10:42:00,113 INFO  [main] c.a.Loader - service,credential,owner\n2026-12-07 10:42:00,114 INFO  [main] c.a.Loader - billing,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a",
        "[2026-12-07 10:42:00] WARN: [deploy]\n[2026-12-07 10:42:00] WARN: secret =\n[2026-12-07 10:42:00] WARN:     Zx8Qw3Lm7Rt2Vk9Np4",
        "11-03 08:15:02.221  812  840 E Sync: db.internal:5432:prod:app:Vq3Lm8Zt2Rw9",
    ]);
    assert_clean(&[
        "2026-12-07 10:42:00,113 INFO  [main] c.a.Loader - service,credential,owner\n2026-12-07 10:42:00,114 INFO  [main] c.a.Loader - billing,${BILLING_CREDENTIAL},team-a",
        // A secret word after the level is the message's, not a logger's name.
        "2026-12-07T10:42:00Z DEBUG password: reset requested for user 1842\n2026-12-07T10:42:01Z INFO token: refreshed, expires in 3600s",
        "11-03 08:15:02.221  812  840 E Sync: db.internal:5432:prod:app:*",
    ]);
}

#[test]
fn a_cdata_sections_markers_and_a_terminals_prompt_are_layout() {
    assert_found(&[
        "<note><![CDATA[db.internal:5432:prod:app:Vq3Lm8Zt2Rw9]]></note>",
        "<cfg><![CDATA[the vault password is Tq8wLm3zXr]]></cfg>",
        "$ service,credential,owner\nbilling,q8Zt3Lw9Xv2Kp7Rm4Nc6Hs1Jd5Fg0Yb,team-a",
    ]);
    assert_clean(&[
        "<cfg><![CDATA[the vault password is rotated monthly]]></cfg>",
        "<script><![CDATA[if (a[b[0]]> 1) { token = next(); }]]></script>",
        "$ service,credential,owner\nbilling,$BILLING_CREDENTIAL,team-a\n$ echo $DB_PASSWORD",
    ]);
}

#[test]
fn a_json_documents_message_and_array_items_are_lines() {
    // No escape in them: a prompt that is one JSON document is read for its strings all the same.
    assert_found(&[
        r#"{"role": "user", "content": "my password: plumtigerlanternharbor"}"#,
        r#"["[deploy]", "secret =", "    Zx8Qw3Lm7Rt2Vk9Np4"]"#,
        r#"{"level": "info", "msg": "echo 'Rt5wQz8LmX' | sudo -S systemctl restart app"}"#,
        // Under a secret's key the string is that key's value.
        r#"{"password": "correct horse battery staple"}"#,
    ]);
    assert_clean(&[
        r#"{"level": "info", "msg": "- password: ${DB_PASSWORD}"}"#,
        r#"["[deploy]", "secret =", "    ${DEPLOY_SECRET}"]"#,
        r#"{"ts": "2026-12-07T10:42:00Z", "trace_id": "7f3a9c2e4b1d4e8a9c2f1a2b3c4d5e6f", "msg": "token refreshed for session 8c1f2e3d"}"#,
        r#"["read", "write", "admin:token", "7f3a9c2e4b1d4e8a9c2f1a2b3c4d5e6f"]"#,
    ]);
}

#[test]
fn a_spreadsheet_cell_copied_whole_is_read_as_its_text() {
    // Quotes around it, each quote inside doubled.
    assert_eq!(
        spans("\"config:\napi_key = \"\"Hd83kfLq0Zp2Wm7Xv5Nc\"\"\nthanks\""),
        ["Hd83kfLq0Zp2Wm7Xv5Nc"]
    );
    assert_found(&[
        "\"It fails here:\n\"\"db_password\"\": \"\"Tq8wLm3zXrK9\"\",\n\"\"user\"\": \"\"ops\"\"\"",
    ]);
    assert_clean(&[
        "\"config:\napi_key = \"\"${API_KEY}\"\"\nthanks\"",
        "\"He said \"\"the token expired\"\" and left\"",
        // A lone quote inside: quotations, not a cell.
        "\"password\" and \"token\" are the words we mask",
    ]);
}

#[test]
fn a_table_cell_broken_by_br_holds_lines_of_its_own() {
    assert_found(&[
        "| step | note |\n| --- | --- |\n| 1 | the config:<br>\\| service \\| key \\|<br>\\|---\\|---\\|<br>\\| acme \\| Zx8Qw3Lm7Rt2Vk9Np4Hs6Jd1Fg5Yb0Cu \\| |\n| 2 | retry |",
        "| host | line |\n|---|---|\n| db | db.internal:5432:prod:app:Vq3Lm8Zt2Rw9<br>from the wiki |",
    ]);
    assert_clean(&[
        "| step | note |\n| --- | --- |\n| 1 | the config:<br>\\| service \\| key \\|<br>\\|---\\|---\\|<br>\\| acme \\| $ACME_KEY \\| |\n| 2 | retry |",
        "| host | line |\n|---|---|\n| db | db.internal:5432:prod:app:*<br>from the wiki |",
        "| name | notes |\n|---|---|\n| token | expires<br>after 1h |\n| session | 7f3a9c2e4b1d<br>8c1f2e3d |",
    ]);
}

#[test]
fn an_errors_message_after_its_name_is_a_lines_text() {
    assert_found(&[
        "Exception in thread \"main\" java.lang.IllegalStateException: db.internal:5432:prod:app:Vq3Lm8Zt2Rw9\n\tat com.acme.Db.open(Db.java:42)",
        "Traceback (most recent call last):\n  File \"deploy.py\", line 3, in <module>\nValueError: - password: qzvbx-tlmrk-wyhse",
    ]);
    assert_clean(&[
        "Exception in thread \"main\" java.lang.IllegalStateException: db.internal:5432:prod:app:*\n\tat com.acme.Db.open(Db.java:42)",
        "Traceback (most recent call last):\n  File \"deploy.py\", line 3, in <module>\nValueError: - password: ${DEPLOY_PASSWORD}",
        "TypeError: token is undefined\nKeyError: 'api_key'",
    ]);
}

#[test]
fn a_pages_line_level_tags_break_its_lines() {
    assert_eq!(
        spans("<p>I ran<br>\ncurl -u developer:yqDVtkqPECriaLRi<br>\nwhy does this fail?</p>"),
        ["yqDVtkqPECriaLRi"]
    );
    assert!(find_secret("<p>config:<br>user = Aladdin<br>password = open_sesame</p>").is_some());
    // A page's paragraph, its entities decoded: `&lt;password&gt;…` is an element.
    assert_eq!(spans("<p>my password is yjFcoHmQK52</p>"), ["yjFcoHmQK52"]);
    assert_eq!(
        spans("<p>&lt;password&gt;Hq8vN2pLxQ7&lt;/password&gt;</p>"),
        ["Hq8vN2pLxQ7"]
    );
    assert_clean(&["<p>fn check(password: &amp;str) -&gt; bool { hash(password) == self.hash }</p>"]);
    assert_clean(&[
        "<p>curl -u &lt;user:password&gt; https://test.com/endpoint<br>\n</p>",
        "<p>password = $DB_PASSWORD<br>\ntoken: ${{ secrets.TOKEN }}</p>",
        "line one<br>\nline two<br>\n<li>item</li>",
    ]);
}

/// C#'s verbatim and interpolated strings (`@"…"`, `$"…"`) around a slot's own name are the
/// name; around a random literal they hold the secret.
#[test]
fn a_string_prefix_around_a_slots_name_is_no_secret() {
    assert_clean(&[
        "private const string ServicePasswordSecretKey = @\"Password\";",
        "static readonly string ApiTokenSecretKey = $\"Token\";",
    ]);
    assert_found(&["public const string SmtpPassword = @\"r9T!vQ2#mZ8pL4wX\";"]);
}

/// A lower-case variable naming the secret, handed on in a call's argument list split over
/// lines, holds the secret; the literal in the same place is one.
#[test]
fn a_variable_naming_the_secret_in_an_argument_list_is_no_secret() {
    assert_clean(&[
        "conn = connect(\n    host=db_host,\n    password=db_password,\n    port=5432,\n)",
        "client = Client(\n    api_key=staging_api_key,\n    timeout=30,\n)",
    ]);
    assert_found(&[
        "conn = connect(\n    host=db_host,\n    password=\"Wq8!zL3vR6tY\",\n    port=5432,\n)",
        "client = Client(\n    api_key=\"c4Tz9QmW2xLp7VbN8rKs\",\n    timeout=30,\n)",
    ]);
}

/// A tool's name and its version under a weak key (a cache key, a lock key) is a label.
#[test]
fn a_name_and_its_version_under_a_weak_key_is_a_label() {
    assert_clean(&[
        "    cache-key: node-20.11.x",
        "lock_key = terraform-1.7.5",
        "key: gradle@8.6",
    ]);
    assert_found(&["    cache-key: nV7qZ2xL9mT4wK8p"]);
}

/// A value that is a sentence about itself (`this-is-my-token`) stands in for the secret; a
/// passphrase of words without a verb among them is one.
#[test]
fn a_sentence_in_the_secrets_place_stands_in_for_it() {
    assert_clean(&[
        "token: \"this-is-my-token\"",
        "API_SECRET=\"it_is_not_a_real_secret\"",
        "password = 'this.is.just.a.test'",
    ]);
    assert_found(&[
        "password = \"lantern-orbit-mossy-quartz\"",
        "API_SECRET=\"tundra_Falcon_Orbit_97\"",
    ]);
}

/// `SAMPLE` in capitals inside a value marks it as documentation, as `EXAMPLE` does; the
/// same value without it is a key.
#[test]
fn the_sample_marker_makes_a_value_a_stand_in() {
    assert_clean(&[
        "AWS_SECRET_ACCESS_KEY=SAMPLEq8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6Gs0A",
        "aws_session_token = \"Fq8Zr2LmVx5Tk9Wb3SAMPLEYn7Hc1Pf4Dj6Gs0A2Bb4Cc\"",
    ]);
    assert_found(&["AWS_SECRET_ACCESS_KEY=Wq8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6Gs0A2Bb4Cc"]);
}

/// After a vendor's prefix, two characters in turn are typed filler, as one repeated is.
#[test]
fn two_characters_in_turn_after_a_prefix_are_filler() {
    assert_clean(&[
        "GH_TOKEN=ghp_cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
        "the format is ghp_1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z",
    ]);
    assert_found(&["GH_TOKEN=ghp_Zq8Lm2Vx9Tk4Wb8Yn3Hc6Pf1Dj7Gs5Aa0Qe"]);
}

/// An `.npmrc` setting scoped to a registry (`//host/path:_password=…`) holds its literal
/// text as an env file does; a reference there is none.
#[test]
fn an_npmrc_scoped_password_is_its_literal_text() {
    assert_found(&[
        "//npm.pkg.example.net/team:_password=TroubadorQuietlyJumps",
        "//registry.corp.example/:_password=MarbleOtterHarbor",
    ]);
    assert_clean(&[
        "//npm.pkg.example.net/team:_password=${NPM_PASSWORD}",
        "//registry.corp.example/:_authToken=$NPM_TOKEN",
    ]);
}

/// `_auth` under a registry's scope is `.npmrc`'s `user:password` slot: a passphrase typed there
/// is the password; a reference, a flag (`always-auth`) or `_auth` outside a scope is not read so.
#[test]
fn an_npmrc_scoped_auth_is_a_passwords_slot() {
    assert_found(&[
        "//npm.pkg.example.net/team:_auth=LanternWaffleOrbit",
        "; mirror\n//mirror.internal.test/npm/:_auth=QuietHarborMaple",
    ]);
    assert_clean(&[
        "//npm.pkg.example.net/team:_auth=${NPM_AUTH}",
        "//npm.pkg.example.net/team:always-auth=true",
        "auth_mode=LanternWaffleOrbit",
    ]);
}

/// YAML's `!!binary` tag says how the value is written: the base64 after it is the value.
#[test]
fn a_yaml_binary_tag_is_followed_by_the_value() {
    assert_eq!(
        spans("signing_secret: !!binary cTdMbTJWeDlUazRXYjhZbjNIYzZQZjFEajdHcw=="),
        ["cTdMbTJWeDlUazRXYjhZbjNIYzZQZjFEajdHcw=="]
    );
    assert_clean(&["signing_secret: !!binary ${SIGNING_SECRET_B64}"]);
}

/// An AWS resource name holds words that name a secret (`:secret:BillingWebhookSecret-…`):
/// it says where the secret lives, not what it is.
#[test]
fn an_aws_resource_name_names_where_a_secret_lives() {
    assert_clean(&[
        "  webhookSecret: 'arn:aws:secretsmanager:ap-south-1:210987654321:secret:BillingWebhookSigningSecret-55128830',",
        "PAYMENT_SECRET=arn:aws:secretsmanager:eu-west-1:210987654321:secret:PaymentsSharedSecret-90817263",
    ]);
    assert_found(&["  webhookSecret: 'Bq8vK2mQ5tL9wX3pN7bJ55128830',"]);
}

/// A hex digest under a `hashed…` key is kept to recognise the secret, not the secret; a
/// random value there, or a digest under the secret's own name, still is one.
#[test]
fn a_hex_digest_under_a_hashed_key_is_no_secret() {
    assert_clean(&[
        "\"hashed_password\": \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
        "hashedToken = \"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8\"",
    ]);
    assert_clean(&[
        "IGNORED_TOKEN_SHA = os.getenv(\"IGNORED_TOKEN_SHA\", \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\")",
    ]);
    assert_found(&[
        "hashedToken = \"q8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6\"",
        "SERVICE_TOKEN = os.getenv(\"SERVICE_TOKEN\", \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\")",
        "api_token = \"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8\"",
    ]);
}

/// A PEM block whose body is a sentence in camel case, no digit nor `+/=` in it, is a
/// format's illustration; a base64 body is a key.
#[test]
fn a_pem_body_of_camel_case_words_is_an_illustration() {
    assert_clean(&[
        "-----BEGIN RSA PRIVATE KEY-----\nputTheWholeKeyBodyOfTheDeployUserHereBeforeRunningTheScript\n-----END RSA PRIVATE KEY-----",
    ]);
    assert_found(&[
        "-----BEGIN RSA PRIVATE KEY-----\nputTheWholeKeyBodyOfTheDeployUser7HereBefore+RunningTheScript/\n-----END RSA PRIVATE KEY-----",
    ]);
}

/// One count of six or more making most of a short value is filler typed around a run; a
/// word with a shorter count, or a random value, is a password.
#[test]
fn a_short_value_mostly_one_count_is_filler() {
    assert_clean(&[
        "db_pass = 3456789012b7",
        "API_SECRET=98765432zq1",
        "auth_token: \"k345678901\"",
    ]);
    assert_found(&["db_pass = 7Qm2x9Lk4Tz8", "API_SECRET=Summer123456"]);
}

/// A phrase opening with a negation says what the value is not: a stand-in.
#[test]
fn a_phrase_opening_with_a_negation_is_a_stand_in() {
    assert_clean(&[
        "api_secret = 'notTheProductionValue'",
        "DB_PASSWORD=no_password_set_yet",
        "token: \"not-a-real-token\"",
    ]);
    assert_found(&["api_secret = 'nottinghamForestFan'", "DB_PASSWORD=Nq8vR2mXz7"]);
}

/// A provider's word, an app's numeric id, a separator, then the app's secret: the secret.
#[test]
fn a_providers_id_then_a_separated_secret_is_its_secret() {
    assert_found(&[
        "Facebook = 518236470912358 | 7d2c94e1b08af35c6e917d40a2b8f1c3;",
        "facebook: 518236470912358 / 7d2c94e1b08af35c6e917d40a2b8f1c3",
    ]);
    assert_clean(&[
        "Facebook = 518236470912358 | 00000000000000000000000000000000;",
        "facebook: 518236470912358 / likes-and-comments-per-day",
    ]);
}

/// A keyed hash's or a signed token's key passed as a literal is the key when it looks
/// generated; a stand-in or a variable there is none.
#[test]
fn a_keyed_calls_literal_key_is_a_secret() {
    assert_found(&[
        "const sig = crypto.createHmac('sha256', 'Tz4mQ8vLx2Wp9Kd7Rb3N').update(body).digest('hex');",
        "mac = hmac.new(b'Lq7Zx2Vm9Tk4Wb8Yn3Hc', msg, hashlib.sha256)",
        "Algorithm alg = Algorithm.HMAC256(\"Pq8Wn2Zx5Lm9Tk3Vb7Rc\");",
        "const t = jwt.sign({ sub: user.id }, 'Hx9Lm2Qw7Zt4Vk8Np3Rb', { expiresIn: '1h' });",
    ]);
    assert_clean(&[
        "const sig = crypto.createHmac('sha256', process.env.WEBHOOK_KEY).update(body).digest('hex');",
        "mac = hmac.new(b'secret', msg, hashlib.sha256)",
        "const t = jwt.sign({ sub: user.id }, 'keyboard cat');",
        "Algorithm alg = Algorithm.HMAC256(\"changeme\");",
    ]);
}

/// A word after a vendor's prefix is a token's name only where a token goes: in a password's
/// slot it is the password (`skywalker` starts with `sk`, `keystone` with `key`).
#[test]
fn a_word_starting_with_a_vendors_prefix_in_a_passwords_slot_is_the_password() {
    assert_found(&[
        "DB_PASSWORD=skywalker",
        "password: keystone",
        "Password: Patagonia",
        "RABBITMQ_DEFAULT_PASS=keymaster",
        "mysql -u root -ppatriots app",
        "git clone https://deploy:skimboard@git.corp.test/app.git",
        "docker login -u ci -p patriots registry.corp.test",
    ]);
    assert_clean(&[
        "client = WebClient(token=\"xoxb-valid\")",
        "headers = {\"token\": \"ghp_token\"}",
    ]);
}

/// A field named `pass` alone holds a password that looks like one; a word there is a verdict,
/// a render pass or a label.
#[test]
fn a_word_under_a_bare_pass_field_is_no_password() {
    assert_clean(&[
        "{\"pass\": \"Passed\", \"fail\": \"Failed\", \"skip\": \"Skipped\"}",
        "const t = { pass: 'passed', fail: 'failed' };",
        "shader: { pass: \"ForwardBase\", queue: \"Geometry\" }",
        "render_passes:\n  - pass: \"gbuffer\"",
    ]);
    assert_found(&[
        "{\"host\": \"db01\", \"pass\": \"tr0ut-lake\"}",
        "smtp:\n  user: ops\n  pass: 'Vel0cipede'",
        "<Pass>Kx8#vQ2mLp</Pass>",
    ]);
}

/// A key's header quoted in code is a key when its body follows as quoted strings, whether or
/// not the END line made it into the prompt; a header alone in a call is a pattern.
#[test]
fn a_quoted_header_with_its_body_in_quoted_strings_is_a_key() {
    assert_found(&[
        "PRIVATE_KEY = (\n    \"-----BEGIN RSA PRIVATE KEY-----\\n\"\n    \"ayEh6lxKRYYGKTfDXuFMbnrUMs/OVqePUUQsXQL7FJgvxJc/OQRsXqAvIzbl0aP2\"\n    \"hQ1nKMdqiOEPwG5sNZiquoH6FlvkZM6LaVG5cSQUkR/rTZ19PLAfSwYmaVmGmuOd\"\n)",
        "const key = \"-----BEGIN PRIVATE KEY-----\\n\" +\n\t\"ayEh6lxKRYYGKTfDXuFMbnrUMs/OVqePUUQsXQL7FJgvxJc/OQRsXqAvIzbl0aP2\\n\" +\n\t\"hQ1nKMdqiOEPwG5sNZiquoH6FlvkZM6LaVG5cSQUkR/rTZ19PLAfSwYmaVmGmuOd\\n\" +",
    ]);
    assert_clean(&["if pem.startsWith(\"-----BEGIN RSA PRIVATE KEY-----\") {\n    return parse(pem)\n}"]);
}

/// A data source name with no scheme (Go's MySQL driver: `user:password@tcp(host)/db`) holds its
/// password as a URL's userinfo does; a stand-in, a format string or an empty password does not.
#[test]
fn a_data_source_name_without_a_scheme_holds_its_password() {
    assert_found(&[
        "dsn := \"orders:Hq7#vLp2Zx9m@tcp(10.2.0.8:3306)/orders?parseTime=true\"",
        "sql.Open(\"mysql\", \"report:w8Kd!r4TqZ@unix(/run/mysqld/mysqld.sock)/stats\")",
        "MYSQL_DSN=etl:Pz5mQ2vX8wLr@tcp6([::1]:3306)/warehouse",
    ]);
    assert_clean(&[
        "dsn := fmt.Sprintf(\"%s:%s@tcp(%s)/orders\", user, pass, addr)",
        "MYSQL_DSN=etl:${MYSQL_PASSWORD}@tcp(db:3306)/warehouse",
        "dsn := \"root:@tcp(localhost:3306)/test\"",
        "dsn := \"user:password@tcp(127.0.0.1:3306)/dbname\"",
        "mail jane@tcp(ops) about the outage",
    ]);
}

/// A key with a generated head before its marker is judged whole: a run its body opens with
/// (a random `A` before the format's fixed `AAAAA`) is no filler after 52 random characters, and
/// the version and padded tail Microsoft's unclassified pattern allows are the key still; a head
/// of filler stays a format's illustration.
#[test]
fn an_annotated_key_is_judged_whole_with_its_head() {
    assert_found(&[
        "the maps call returns 401 with WSDCwCYBmT5QTAA8paVbrKU5OmRUEmsYTAov1AAd6IW9pOL1BahHJQQJ99vCpzOGkGzCNCDAAAAAAZMPbhmi as subscription",
        "rotated: igseMWt7OuODetEdwKk32ybMyICCKoLgWdFHWeDgp7wYkKResMWTJQQJ9HNFacueDyDncRCXKgXl2s2c1odgVc==",
    ]);
    assert_clean(&[
        "format: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAJQQJ9HnF0viQrs37n2DUB3qxfdfNzI7S",
        "the version marker JQQJ9H alone names no key",
    ]);
}

/// One short unit typed over and over where a generated token goes (`dead.dead.DEAD-…`) is a
/// stand-in, case and separators aside; a random body of that shape is a secret. In a password's
/// slot a typed word is still the password.
#[test]
fn a_short_unit_repeated_in_a_tokens_place_is_filler() {
    assert_clean(&[
        "the portal showed xyz7Q~beef.beef.BEEF-BEEF-beef~beefbeef under Certificates",
        "copied from the wiki: abc8Q~cafe_cafe_CAFE_cafe_cafe_cafe_cafe",
        "the sample ghp_ababABABababABABababABABababABAB1212 was rejected",
    ]);
    assert_found(&[
        "client_secret = \"Xe47Q~Y1QLCbKGkrr3JQCtfeaF7ERpGbiOYO8LV\"",
        "db_password = \"qwerqwerqwerqwerqwerqwer\"",
    ]);
}

/// A private key's header with lines below that hold no key (`abab…`, a sentence in camel case)
/// is the format's illustration even when the END line was cut off; a body fragment of base64
/// with digits, or the header alone, may be a key cut short and stays one.
#[test]
fn a_key_header_over_illustration_lines_without_end_is_no_key() {
    assert_clean(&[
        "the loader wants\n-----BEGIN EC PRIVATE KEY-----\nxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxyxy\nand nothing else?",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nputTheWholeKeyFileContentsRightHere\n",
    ]);
    assert_found(&[
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCLfgViXFeO7leaonhioWkUp9vfo+27zo8\n",
        "-----BEGIN DSA PRIVATE KEY-----",
    ]);
}

/// An export's CSV header titles its columns in words (`App name,Client secret,Expires`): a
/// generated cell under the secret's column is read as a lowercase header's is; a note or a
/// reference there is not, and a line of code with a space in a cell names no column.
#[test]
fn a_csv_headers_titled_columns_name_their_cells() {
    assert_found(&[
        "App name,Client secret,Expires\nbilling-sync,Vb3R~k9QmT2xLp7WzN4sYh8D,2027-01-31",
        "Service\tSigning key\tOwner\nwebhooks\tc8e1f0a93b7d4e62a1f5c09d8b3e7a46\tplatform",
    ]);
    assert_clean(&[
        "App name,Client secret,Expires\nbilling-sync,stored in the vault,2027-01-31",
        "App name,Client secret,Expires\nbilling-sync,${BILLING_SECRET},2027-01-31",
        "return user, token\nprint(user, token)",
    ]);
}

/// A vendor whose alphabet is capitals and digits issues a body of capitals alone about once in
/// thirty: that is its key, in prose, a config or a header; capitals typed as words, one
/// repeated, a count or the documentation marker stay stand-ins.
#[test]
fn a_body_of_capitals_alone_is_a_key_where_the_alphabet_has_no_lowercase() {
    assert_kind(
        SecretKind::Vendor("aws_access_key"),
        &[
            "the job died with AKIAWQRTZPMLKJHGBVCN in its log",
            "[default]\naws_access_key_id = ASIAPLMNKJHGTRFDCXSW",
            "{\"AccessKeyId\": \"AKIAZRTPQMWNBVCXLKJH\", \"Expiration\": null}",
        ],
    );
    assert_clean(&[
        "the docs show AKIAQQQQQQQQQQQQQQQQ as the format",
        "aws_access_key_id = AKIAACCESSKEYIDVALUE",
        "aws_access_key_id: AKIAMYAWSKEYIDGOESIN",
        "use AKIAKLMNOPQRSTUVWXYZ as a stand-in",
        "key AKIAIOSFODNN7EXAMPLE in the docs",
    ]);
}

/// A digit tells a vendor's generated body from a word where the rule asks for one; a long run
/// of random mixed-case letters is generated without one, an identifier is not.
#[test]
fn a_long_body_of_random_mixed_case_letters_needs_no_digit() {
    assert_kind(
        SecretKind::Vendor("notion_token"),
        &[
            "why is secret_QzWvTkLpRmXbNcYdHsJfGaKeUtBoIqPlZxCvBnMrTgW rejected?",
            "NOTION_KEY=\"secret_hRtKwQzPmLvXbNjYcFdGsAeUoIkTrWqZxCbVnMlPkJh\"",
            "{\"auth\": \"secret_BxVnMqWzRtYpLkJhGfDsAzXcVbNmQwErTyUiOpAsDfG\"}",
        ],
    );
    assert_kind(
        SecretKind::Vendor("settlemint_token"),
        &["deploy failed: sm_pat_QzWvTkLpRmXbNcYd was revoked"],
    );
    // Random letters that split into short words now and then are told by their entropy.
    assert_kind(
        SecretKind::Vendor("notion_token"),
        &["my notion key is secret_MpVbglWsXUwowoMAiIiyfVlFAjzfJbMsZXzmbuClelm"],
    );
    assert_clean(&["set sm_pat_ProjectTokenName in the vault"]);
    assert_clean(&[
        "see secret_ThisIsTheNameOfTheSettingThatHoldsTheKeyVal in the docs",
        "the field secret_accessTokenForTheIntegrationWorkspaceOwners is empty",
    ]);
}

/// A generated literal alone in a call that makes or connects a client is its credential, in
/// any language; an address, a file, an id looked up, a UUID, or a random literal in a call
/// that makes no client is none.
#[test]
fn a_clients_sole_random_literal_is_its_credential() {
    assert_found(&[
        "var svc = new BillingClient(\"Rk4vQ9mZ2xL7pT3wN8bY5cJ1\");",
        "c, err := search.NewClient(\"hT6pW2qZ9vK4mR8xL3nB7yD5\")",
        "api = Payments::Client.new('Zq8Lm3Vx7Tp2Wk9Rb4Nd6Hs1')",
        "ws = pusher.connect('Mx5Qb8Rt2Lz7Wv4Kp9Yn3Jd6')",
        "bot.login(\"Yp3Nw8Kq5Zr2Vm7Tx4Lb9Hd6F\")",
    ]);
    assert_clean(&[
        "var http = new HttpClient(\"https://api.corp.test/v2\");",
        "es = Elasticsearch.Client(\"node-3.corp.test:9200\")",
        "c = storage.Client(\"d3f1a2b4-5c6e-4f70-8a9b-0c1d2e3f4a5b\")",
        "c = registry.getClient(\"Rk4vQ9mZ2xL7pT3wN8bY5cJ1\")",
        "digest = hashlib.sha256(\"Rk4vQ9mZ2xL7pT3wN8bY5cJ1\")",
        "img = open(\"Rk4vQ9mZ2xL7pT3wN8bY5cJ1.png\")",
    ]);
}

/// A secret alone on the one line of a triple-quoted block (Python, TOML, Kotlin, Swift) under a
/// secret key is the value; a block of text, a sentence there or a metadata key's block is not.
#[test]
fn a_secret_on_a_triple_quoted_blocks_one_line_is_the_value() {
    assert_found(&[
        "WEBHOOK_SECRET = \"\"\"\nHq4vZ8mTx2Lp9Rk3Wb7N\n\"\"\"",
        "[smtp]\npassword = '''\n  Tz5nQ9xLm2Vb8Kp4\n'''",
        "val apiToken = \"\"\"\n        Pw7cR3kZx9Lm2Tq6Vb4N\n    \"\"\".trimIndent()",
        "let clientSecret = \"\"\"\nNb6Kq2Wz8Tx4Lm9Pr3Vh\n\"\"\"",
    ]);
    assert_clean(&[
        "api_token = \"\"\"\nThe token used by the nightly export job.\n\"\"\"",
        "password_hint = \"\"\"\nHq4vZ8mTx2Lp9Rk3Wb7N\n\"\"\"",
        "SECRET_DOC = \"\"\"\nfirst step\nsecond step\n\"\"\"",
    ]);
}

/// A property list's value element may hold its text on a line of its own, as any element may:
/// under a secret `<key>` it is the secret; a version or a reference there is not.
#[test]
fn a_plist_string_on_its_own_line_after_a_secret_key_is_the_secret() {
    assert_found(&[
        "<key>ClientSecret</key>\n<string>\n  Rv8Kx3Qm7Zt2Lp9Wn4Hb\n</string>",
        "<dict>\n\t<key>api_token</key>\n\t<string>\n\t\tMz4Tq8Vx2Kp7Rn3Lw9Yc\n\t</string>\n</dict>",
    ]);
    assert_clean(&[
        "<key>CFBundleShortVersionString</key>\n<string>\n  4.12.0\n</string>",
        "<key>ClientSecret</key>\n<string>\n  $(CLIENT_SECRET)\n</string>",
    ]);
}

/// A generated literal in braces filling a secret's value is the literal; a template's or
/// JSX's braces hold a name or an expression.
#[test]
fn a_random_literal_in_braces_is_the_value_and_an_expression_is_not() {
    assert_found(&[
        "API_SECRET={Wd5Lq9Zx3Tm7Kv2Rb8Np}",
        "export DB_PASS={Gh7Tz2Xq9Lm4Vk8R} && ./migrate",
    ]);
    assert_clean(&[
        "<Checkout apiKey={stripeKey} token={session.token} />",
        "API_SECRET={{ vault_api_secret }}",
        "<Form password={passwordValue} />",
    ]);
}

/// A password glued to the sentence in Chinese or Japanese, without a blank or a particle, is
/// the password; a vendor's token glued so keeps its vendor's name; words or an algorithm's
/// name glued there are the sentence.
#[test]
fn a_password_glued_to_cjk_text_is_found_and_a_vendor_token_keeps_its_kind() {
    assert_found(&[
        "新的密码Lk7Qz2Wx9Tm4Vb8R已经发给你了",
        "パスワードRt6Mq9Xz2Lk8Wv3Nが違う",
    ]);
    assert_kind(
        SecretKind::Vendor("github_token"),
        &["我的令牌ghp_Zq8Lm3Vx7Tp2Wk9Rb4Nd6Hs1Jc5Fg0Ya2Ke不能用"],
    );
    assert_clean(&[
        "密码算法PBKDF2WithHmacSHA512要换",
        "我的密码ManagerForTheWholeTeam不好用",
    ]);
}

/// An integrity value labelled by its algorithm (`sha384-…`) on a line naming a token is a hash;
/// a random value there without the label is not.
#[test]
fn an_algorithm_labelled_digest_is_no_secret_on_a_line_naming_a_token() {
    assert_clean(&[
        "token: \"sha384-Wk3vQ8mZ2xL7pT+/wN8bY5cJ1qR4sD6fG9hK0aE3uI7oP2lM5nB8v\"",
        "the cdn token is sha512-Rk4vQ9mZ2xL7pT3wN8bY5cJ1Xz6Lm0Qa== now",
    ]);
    assert_found(&[
        "token: \"Wk3vQ8mZ2xL7pT3wN8bY5cJ1qR4sD6fG9hK\"",
        "the cdn token is Rk4vQ9mZ2xL7pT3wN8bY5cJ1Xz6Lm0Qa now",
    ]);
}

/// A `$` before a variable's name in single quotes is a reference (Compose expands it there);
/// a `$` before letters and digits mixed is a literal that shells expand nothing in.
#[test]
fn a_single_quoted_dollar_name_is_a_reference_and_mixed_digits_are_a_literal() {
    assert_clean(&[
        "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: '$PgAdminPass3'",
        "MYSQL_ROOT_PASSWORD: '$RootPassword12'",
    ]);
    assert_found(&[
        "MYSQL_ROOT_PASSWORD: '$R0otPa55w0rd'",
        "db_password = '$k9Lm2Vx7Qp'",
    ]);
}

/// A URL query's value ends at the next `&name=`, however many parameters follow: a secret
/// there is the value alone, and a reference or a word there does not run on into the
/// parameters after it as one unquoted password.
#[test]
fn a_query_value_ends_at_the_next_parameter() {
    assert_eq!(
        spans(
            "curl \"https://api.test/v2/items?api_key=Vd8Lq3Zx9Tm2Kw7Rb4Np&page_size=50&sort_by=name&include_meta=true\""
        ),
        ["Vd8Lq3Zx9Tm2Kw7Rb4Np"]
    );
    assert_found(&["open https://hooks.test/in?token=Hx2Qm9Zt4Lk7Vb3Wn8Rc&a_b=1&c_d=2&e_f=3 in the browser"]);
    assert_clean(&[
        "const url = `https://api.test/v2/items?auth_token=${authToken}&page_size=50&sort_by=name&include_meta=true`;",
        "https://idp.test/authorize?secret=none&oauth_state=Vd8Lq3Zx9Tm2Kw7Rb4Np&code_challenge=Hx2Qm9Zt4Lk7Vb3Wn8Rc&response_type=code",
    ]);
}

/// A digest's algorithm before a dash (`sha384-…`) makes its line about a hash; a service's name
/// that opens with a word of that list (`public-api`, `hash-router`) does not, and a generated
/// token on its line is still one.
#[test]
fn a_service_named_with_a_hash_word_leaves_its_line_about_tokens() {
    assert_found(&[
        "public-api deploy uses Tq4Wz8nK2vLr7YbXc3Hm as the token",
        "digest-proxy now wants the key Jm5Rk9Pw2Xs7Vd4Nq8Lt on every call",
    ]);
    assert_clean(&[
        "<link rel=\"stylesheet\" href=\"x.css\" integrity=\"sha512-Q8vLzW3kN7pXr2Ym5Tc9Bd4Hj6Fs1Ga0\"> and the token check fails",
        "the digest sha256-Kp7Wm2Xq9Lr4Vt8Nz3Yb5Hc6Jd1Fs0Ga needs a new key",
        "token: sha384-qw+Lr4Vt8Nz3Yb5Hc6Jd1Fs0GaKp7Wm2Xq9Tz5Rb8Mn",
    ]);
}

/// `'$` and one capitalised word with a number (`'$Autumn1987'`) is a weak password typed with a
/// symbol in front; two words or more run together (`'$AppDbPwd3'`) name a variable.
#[test]
fn one_word_and_a_number_after_a_dollar_is_a_password() {
    assert_found(&[
        "MARIADB_PASSWORD='$Autumn1987'",
        "$cred = New-Object PSCredential('svc', (ConvertTo-SecureString '$Falcon42' -AsPlainText -Force))\npassword = '$Falcon42'",
    ]);
    assert_clean(&["MARIADB_PASSWORD='$AppDbPwd3'", "password = '$ReportUserPass7'"]);
}

/// Braces after a secret key around a name of words and numbers are an expression (JSX's
/// `secret={clientSecret2}`, `{API_TOKEN_V2}`): a variable, however many digits; a generated
/// literal in braces is still the value.
#[test]
fn a_name_of_words_in_braces_is_a_variable() {
    assert_clean(&[
        "<Checkout publicKey={pk} secret={clientSecret2} />",
        "<Uploader token={API_TOKEN_V2} retries={3} />",
    ]);
    assert_found(&[
        "REDIS_PASSWORD={Vx7qLm2Rz9Kw4Tb}",
        "<Uploader token={bQ8xZr3Lw6Nm1Kv} />",
    ]);
}

/// Given to a client alone, an address written in hex (`0x…`, a wallet's or a contract's), an
/// app's name of words or a list of nodes is no credential; a generated literal there still is.
#[test]
fn a_clients_sole_address_or_name_is_no_credential() {
    assert_clean(&[
        "const wallet = new WalletClient(\"0x5b2e9c71d0a84f36e1b7c59a2d08f4e6b3a1c7d9\")",
        "const c = new AnalyticsClient(\"StorefrontCheckout2024\")",
        "const c = new ClusterClient(\"node7,node8,node9\")",
    ]);
    assert_found(&[
        "const c = new BillingClient(\"Rz8kQ2mXv5Lp9Wt3Nb7Yc4Hd\")",
        "await relay.connect(\"hT6vN1qZ8xK3mR5wP2sL9bYc\")",
    ]);
}

/// Glued to Chinese or Japanese words, words and numbers run together name an algorithm or a
/// product (`HmacSHA256Token`, `SHA384withRSA`); random characters there are the password.
#[test]
fn a_name_glued_to_cjk_words_is_no_password() {
    assert_clean(&["令牌HmacSHA256Token生成", "秘密鍵SHA384withRSAを使って"]);
    assert_found(&["我的密码Wq7Zt2Lx9Kp4Rm不对", "パスワードNd5Vy8Qc3Hj6Xbを忘れた"]);
}

/// Names run together read as two words or more (`DbPass`, `SHA256withRSA`, `TOKEN_2024_PROD`);
/// random letters and digits of a token's alphabet do about once in a thousand.
#[test]
fn a_name_of_words_is_told_from_random_characters() {
    use crate::chars::compound_name;
    for name in [
        "DbPass2",
        "SHA256withRSA",
        "TOKEN_2024_PROD",
        "apiKeyV2Prod",
        "MariaDB11",
    ] {
        assert!(compound_name(name.as_bytes()), "{name}");
    }
    for name in ["Summer2024", "Xq9Lm2Pz7Rt4", "Autumn"] {
        assert!(!compound_name(name.as_bytes()), "{name}");
    }
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = crate::rules::Rng(0x9e37_79b9_7f4a_7c15);
    let named = (0..10_000)
        .filter(|_| {
            let token: Vec<u8> = (0..16)
                .map(|_| ALPHABET[usize::try_from(rng.next() % 62).unwrap_or(0)])
                .collect();
            compound_name(&token)
        })
        .count();
    assert!(named < 25, "{named} of 10000 random tokens read as names");
}

/// English typed in capitals where AWS's capitals go (`AKIA` + `MYSTAGINGROUTERS`) is a stand-in:
/// a vowel in three letters and mostly English's common letters; random capitals there are a key.
#[test]
fn english_in_capitals_after_an_aws_prefix_is_a_stand_in() {
    assert_clean(&[
        "aws_access_key_id = AKIAMYSTAGINGROUTERS",
        "export AWS_ACCESS_KEY_ID=ASIALOCALDEVMACHINEA",
    ]);
    assert_found(&[
        "aws_access_key_id = AKIAWQZPKJXVBMRTLHGD",
        "export AWS_ACCESS_KEY_ID=ASIAQPVKZMWXBTRJDLHN",
    ]);
}

/// Outside a URL's query, `&x=` inside a value is a password's symbols: the value runs on past
/// it. A query's value still ends at the next parameter (see above).
#[test]
fn an_ampersand_and_equals_sign_outside_a_query_stay_in_the_password() {
    assert_found(&[
        "<password>Rk3vW9pZ#tQy*7&m=xfa for staging",
        "secret=&qWtZ8m=#PLVr*dN",
    ]);
    assert_eq!(
        spans("<password>Rk3vW9pZ#tQy*7&m=xfa for staging"),
        ["Rk3vW9pZ#tQy*7&m=xfa"]
    );
    assert_clean(&["webhook: https://hooks.test/in?sig=none&page=2&sort=asc&lang=en"]);
}

/// Visual Basic declares a variable's type with `As` before its value; a connection made from a
/// host, a user and a password (`mysqli_connect`, `getConnection`, Perl's `DBI->connect`) holds
/// the password in its third argument. References, empty and weak stand-ins, and connections
/// of other arguments stay ordinary.
#[test]
fn a_basic_declaration_and_a_connections_password_argument_are_read() {
    assert_found(&[
        "Dim smtpPassword As String = \"Rq7!vLm2Zx8k\"",
        "Private Const ApiSecret As String = \"Hw3nQ8zLp5Xv2Tk9Rm4Yc7Bd\"",
        "$link = mysqli_connect('db.internal', 'shop', 'Rq7!vLm2Zx8k', 'orders');",
        "Connection c = DriverManager.getConnection(DB_URL, \"report\", \"Rq7!vLm2Zx8k\");",
    ]);
    assert_clean(&[
        "Dim smtpPassword As String = ConfigurationManager.AppSettings(\"SmtpPassword\")",
        "Dim passwordPrompt As String = \"Enter your password\"",
        "$link = mysqli_connect('db.internal', 'shop', '', 'orders');",
        "Connection c = DriverManager.getConnection(DB_URL, user, password);",
        "mqtt.connect(\"broker.local\", 1883, 60)",
        "conn = sqlite3.connect(\"orders.db\")",
    ]);
}

/// A quoted password may open with `-` (a command line's or a config's): its quotes say it is no
/// flag; a flag quoted after the password's option, or a negative number, is none.
#[test]
fn a_quoted_password_opening_with_a_dash_is_a_password() {
    assert_found(&[
        "redis-cli --tls -a \"-Wq7+Lm2xR9pT4vZ\" -n 2 DBSIZE",
        "db_password: \"-Wq7+Lm2xR9pT4vZ\"",
    ]);
    assert_clean(&[
        "redis-cli --tls -a '--user' DBSIZE",
        "db_password_retries: \"-1\"",
        "JAVA_OPTS: \"-Xms256m\"",
    ]);
}

/// A line naming a key in Portuguese, Italian, Spanish, Dutch, French, German, Japanese,
/// Chinese, Korean or Russian, or saying the credential is rotated or revoked, is read as one
/// naming `key` is: a generated token on it is a secret, a word or an id is not.
#[test]
fn a_line_naming_a_key_in_another_language_or_its_rotation_holds_its_token() {
    for (text, token) in [
        (
            "a chave nova do bucket de staging: o1TxdFuvQmNsf7Fr22uQjEYYhCIP (não partilhes)",
            "o1TxdFuvQmNsf7Fr22uQjEYYhCIP",
        ),
        (
            "ecco la chiavi del servizio RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet per domani",
            "RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet",
        ),
        (
            "de sleutel van de testomgeving staat hier IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0 tot vrijdag",
            "IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0",
        ),
        (
            "voici la clé du bucket pour ce soir OM3LUxwBoS8C4oXnfpYHU1qbXM merci",
            "OM3LUxwBoS8C4oXnfpYHU1qbXM",
        ),
        (
            "der Schlüssel für das Staging lautet F5f1nr3PWpa7MaIRCfw5eq9mmwesv7SAspDa",
            "F5f1nr3PWpa7MaIRCfw5eq9mmwesv7SAspDa",
        ),
        (
            "本番環境のAPIキー A4jPxeNoxDfL7xXL6bvR5Iq6 を共有します",
            "A4jPxeNoxDfL7xXL6bvR5Iq6",
        ),
        (
            "新的密钥 o1TxdFuvQmNsf7Fr22uQjEYYhCIP 已经生效",
            "o1TxdFuvQmNsf7Fr22uQjEYYhCIP",
        ),
        (
            "스테이징 토큰 RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet 공유합니다",
            "RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet",
        ),
        (
            "новый ключ для стенда IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0",
            "IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0",
        ),
        (
            "ok, use OM3LUxwBoS8C4oXnfpYHU1qbXM for the sandbox, I'll rotate it on Monday",
            "OM3LUxwBoS8C4oXnfpYHU1qbXM",
        ),
        (
            "the old one is revoked, F5f1nr3PWpa7MaIRCfw5eq9mmwesv7SAspDa works from now on",
            "F5f1nr3PWpa7MaIRCfw5eq9mmwesv7SAspDa",
        ),
    ] {
        assert_eq!(spans(text), [token], "{text}");
    }
    assert_clean(&[
        "a chave primária da tabela é user_id, e a estrangeira é order_id",
        "la chiave del dizionario è nome_utente",
        "rotate the image by 90 degrees and save it as img_2024_03_11_final.png",
        "revoked certificates are listed in crl-2024.pem on the share",
        "公開鍵 A4jPxeNoxDfL7xXL6bvR5Iq6 を登録してください",
        "rotated the logs of request 550e8400-e29b-41d4-a716-446655440000 at midnight",
        "la clé primaire est composite (tenant_id, user_id)",
    ]);
}

/// A stand-in may carry the product's name, digits of a version and all (`YOUR_MEM0_API_KEY`,
/// `your-zeta9-token`), when a marker and the slot's word are around it; a generated value or a
/// password's mix of cases there is no stand-in.
#[test]
fn a_stand_in_may_name_its_product() {
    assert_clean(&[
        "api_key = \"YOUR_ZETA9_API_KEY\"",
        "QUORA2_TOKEN: your-quora2-token",
        "settings = {\"secret\": \"YOUR_ACME_SECRET\"}",
    ]);
    assert_found(&[
        "api_key = \"ZETA9_o1TxdFuvQmNsf7Fr22uQjEYYhCIP\"",
        "password = \"your_Hunter22_password\"",
    ]);
}

/// `key` in Portuguese, Italian, Dutch, French and Japanese (`chave`, `chiave`, `sleutel`,
/// `clé`, `キー`) is read as Spanish `clave` is: a generated value after it, words between or a
/// particle glued, is a key (an id's shape too, as after English `key is`); a field's name, a
/// shortcut or a weak word there is not.
#[test]
fn key_in_another_language_takes_a_generated_value() {
    for (text, token) in [
        (
            "a chave do sandbox é 3f6cface-b9f4-4612-9d74-fd99e36a2732",
            "3f6cface-b9f4-4612-9d74-fd99e36a2732",
        ),
        (
            "la chiave per lo staging è A4jPxeNoxDfL7xXL6bvR5Iq6",
            "A4jPxeNoxDfL7xXL6bvR5Iq6",
        ),
        (
            "mijn sleutel is o1TxdFuvQmNsf7Fr22uQjEYYhCIP",
            "o1TxdFuvQmNsf7Fr22uQjEYYhCIP",
        ),
        (
            "ta clé d'accès est OM3LUxwBoS8C4oXnfpYHU1qbXM",
            "OM3LUxwBoS8C4oXnfpYHU1qbXM",
        ),
        (
            "検証用のキーは 7c9a98cc-9040-430a-b56e-cb4f591aa59f です",
            "7c9a98cc-9040-430a-b56e-cb4f591aa59f",
        ),
    ] {
        assert_eq!(spans(text), [token], "{text}");
    }
    assert_clean(&[
        "a chave estrangeira é pedido_id",
        "la chiave è hunter2",
        "de sleutel is de kolom klant_id",
        "la clé étrangère pointe vers commande.id",
        "キーは Enter です",
        "ショートカットキー: Ctrl+Shift+P",
    ]);
}

/// Rust's `Client::new("…")` makes a client as `new Client("…")` does: a generated literal alone
/// there is its credential, through a path too (`openai::Client::new`); another type's `new`,
/// an address or no argument is none.
#[test]
fn a_rust_client_given_a_generated_literal_holds_its_key() {
    assert_found(&[
        "let api = Arc::new(Client::new(\"A4jPxeNoxDfL7xXL6bvR5Iq6o1Txd\"));",
        "let api = openai::Client::new(\"RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet\");",
        "spawn(ApiClient::new(\"IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0\"))",
    ]);
    assert_clean(&[
        "let re = Regex::new(\"OM3LUxwBoS8C4oXnfpYHU1qbXM\");",
        "let id = Id::new(\"01HZX3K9N4QW7E2R5T8Y6U1I0P\");",
        "let api = Client::new();",
        "let api = Client::new(\"https://api.example.com\");",
        "let api = Client::new(\"7c9a98cc-9040-430a-b56e-cb4f591aa59f\");",
    ]);
}

/// A call whose result is assigned to a client's name makes that client, whatever the type is
/// called (`let client = Acme::new("…")`, `var client = new Acme("…")`): a generated literal
/// alone there is its credential; another name, a comparison, a UUID or no argument is none.
#[test]
fn a_call_assigned_to_a_client_takes_its_key() {
    assert_found(&[
        "let client = Zephyr::new(\"o1TxdFuvQmNsf7Fr22uQjEYYhCIP\");",
        "var client = new Zephyr(\"A4jPxeNoxDfL7xXL6bvR5Iq6o1Txd\");",
        "search_client = zephyr.Search(\"RHA1vABeIauuhG5ZPyeqzMeB8pE0sjet\")",
    ]);
    assert_clean(&[
        "let parser = Zephyr::new(\"OM3LUxwBoS8C4oXnfpYHU1qbXM\");",
        "if client == lookup(\"F5f1nr3PWpa7MaIRCfw5eq9mmwesv7SAspDa\") {",
        "let client = Zephyr::new(\"7c9a98cc-9040-430a-b56e-cb4f591aa59f\");",
        "client = Zephyr()",
        "client_id = parse(\"IAjkFeH5K5IxEjPdcF1N9k5VtrhKr0\")",
    ]);
}

/// The quick rejection before the words that name a credential on a line lets each of them
/// through, in any case, and rules out words that only open like one.
#[test]
fn the_quick_rejection_lets_every_other_name_through() {
    use crate::scan::{OTHER_NAMES, may_be_other_name, other_name};
    for w in OTHER_NAMES {
        assert!(
            may_be_other_name(w) && other_name(w),
            "{}",
            String::from_utf8_lossy(w)
        );
        assert!(other_name(&w.to_ascii_uppercase()));
    }
    assert!(!other_name(b"chavez") && !other_name(b"restart"));
}

/// Shapes of a password's slot the line readers once passed over: a user and its password glued
/// to a password's word by a colon (`PWD:user/…`), `password` spelt short (`PSWRD`, `paswd`),
/// Oracle's unquoted `IDENTIFIED BY` inside a host language's string, PowerShell's
/// `-Param:value`, and a JSON Web Key's or .NET `<RSAKeyValue>`'s private members. Their
/// look-alikes stay clean.
#[test]
fn glued_pairs_short_spellings_and_key_members_are_found() {
    for (text, secret) in [
        ("the box is up, PWD:deploy/9eI7XfsyFs", "deploy/9eI7XfsyFs"),
        ("staging Pass:ops.admin/7fYZUbXe1P", "ops.admin/7fYZUbXe1P"),
        ("Login/Password ops/ZbvNhlZy7r for the VPN", "ops/ZbvNhlZy7r"),
        ("export APP_PSWRD=ukd5nBUOm2", "ukd5nBUOm2"),
        ("paswd: HOlycjkzX8", "HOlycjkzX8"),
        (
            "cur.execute(\"CREATE USER etl IDENTIFIED BY K8mXheIHBu\")",
            "K8mXheIHBu",
        ),
        ("New-LocalUser -Name svc -Password:AcCemVkpD7", "AcCemVkpD7"),
        (
            "{\"kty\": \"EC\", \"crv\": \"P-256\", \"d\": \"9xgDE72faowx_scPc1MztFMc5Ep7PUii39nHBMA5peG\"}",
            "9xgDE72faowx_scPc1MztFMc5Ep7PUii39nHBMA5peG",
        ),
        (
            "<RSAKeyValue><Modulus>fR0Y1mKkIHDL6uR9k1O9Nwgd8PF8</Modulus><Exponent>AQAB</Exponent><D>tWq7Vb2mKp9Lx4NcR8sZ3fHj6YdE1gUo</D></RSAKeyValue>",
            "tWq7Vb2mKp9Lx4NcR8sZ3fHj6YdE1gUo",
        ),
        (
            "the members I pasted:\n  \"kty\": \"EC\",\n  \"d\": \"fgVFGYLQ535fKd7KXKz8DSzqwNTpWF6W3i_zOX5U5GI\"",
            "fgVFGYLQ535fKd7KXKz8DSzqwNTpWF6W3i_zOX5U5GI",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text}");
    }
    assert_clean(&[
        "cd there first, pwd:src/components shows where you are",
        "the route is password:reset/confirm",
        "the password reset/confirm flow is broken",
        "run pwd src/Components2 first",
        "PSWD_MIN_LENGTH=12",
        "paswd: ${PASWD}",
        "CREATE USER etl IDENTIFIED BY :new_password;",
        "the grantees were identified by their badge",
        "New-LocalUser -Name svc -Password:$securePass",
        "<RSAKeyValue><Modulus>fR0Y1mKkIHDL6uR9k1O9Nwgd8PF8SucGkSHmynpJfNwrOd9iK7rk</Modulus><Exponent>AQAB</Exponent></RSAKeyValue>",
        "<RSAKeyValue><Modulus>r2Xv9vSG…</Modulus><D>PXFqRIqY…</D></RSAKeyValue>",
        "{\"kty\": \"RSA\", \"e\": \"AQAB\", \"n\": \"fR0Y1mKkIHDL6uR9k1O9Nwgd8PF8SucGkSHmynpJfNwrOd9iK7rk_FcCHMLvvJy-zbgK7iaLrOO7G9qsKnmY6R\"}",
    ]);
}

/// A token after a terminal colour code whose escape byte was lost (`[32m`), PuTTY's `-pw`, the
/// NTLM and Negotiate schemes' tokens, and a Twitter bearer token whose base64 tail is
/// URL-encoded after its run of `A`s; their look-alikes stay clean.
#[test]
fn colour_codes_putty_windows_schemes_and_encoded_tails_are_read() {
    for (text, secret) in [
        (
            "build.log: [32mghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP[0m",
            "ghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP",
        ),
        (
            "\u{1b}[1;33mghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP\u{1b}[0m",
            "ghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP",
        ),
        (
            "plink -batch -ssh ops@10.0.0.7 -pw 2X1Gwm9Kvy uptime",
            "2X1Gwm9Kvy",
        ),
        (
            "Authorization: NTLM TlRMTVNTUAADAAAA780e90jOCRaIrcWj6DhTl83Nvtl2AvFc5B7w9qdjORQtQW9Zice/kTkVzSoamCXctYooiAgtXZyC4tqe",
            "TlRMTVNTUAADAAAA780e90jOCRaIrcWj6DhTl83Nvtl2AvFc5B7w9qdjORQtQW9Zice/kTkVzSoamCXctYooiAgtXZyC4tqe",
        ),
        (
            "the curl call sent AAAAAAAAAAAAAAAAAAAAAk2JjAAAAAAAJl%2FR6n3ZbK9D2TOLDs8TAazW86CJHR1T2SXyTmaf%2BrFtbKuwTUU1JS05n3%2BnMNuK8I9jV2z17HFb0d0m",
            "AAAAAAAAAAAAAAAAAAAAAk2JjAAAAAAAJl%2FR6n3ZbK9D2TOLDs8TAazW86CJHR1T2SXyTmaf%2BrFtbKuwTUU1JS05n3%2BnMNuK8I9jV2z17HFb0d0m",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text}");
    }
    assert_clean(&[
        "[5min] waiting for the runner",
        "[93mWARNING[0m the build is slow",
        "pscp -pw is unsafe, use a key",
        "plink -pw %PW% ops@host",
        "WWW-Authenticate: NTLM",
        "WWW-Authenticate: Negotiate",
        "the curl call sent AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%2BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ]);
}

/// A document's string early in a prompt of many short strings (each string's end looks back for
/// an array's comma after the document), and CDATA openings with no end (each looks ahead for
/// one): both read in linear time.
#[test]
fn strings_after_a_document_and_unclosed_cdata_scan_in_linear_time() {
    assert_findings_linear(|size| {
        vec![
            format!("\"line one\\nline two\" {}", "\"x\" ".repeat(size / 4)),
            "<![CDATA[ x ".repeat(size / 12),
        ]
    });
}

/// Finding the secrets of the prompts `make` writes at a size scales linearly with it.
fn assert_findings_linear(make: impl Fn(usize) -> Vec<String>) {
    let (small, large) = scaling(|size| {
        let prompts = make(size);
        let started = Instant::now();
        for prompt in &prompts {
            let _ = findings(prompt);
        }
        started.elapsed()
    });
    assert!(
        large < small * LINEAR_LIMIT,
        "{RUNS} x {SMALL} bytes took {small:?}, {LARGE} took {large:?}"
    );
}

/// Oracle's unquoted `IDENTIFIED BY` when the statement opens on the line before or is the old
/// `GRANT … TO … IDENTIFIED BY`, and a JSON Web Key printed as a Python dict; a sentence about
/// users identified by something, a key's public members in Python's quotes, and RFC 7517's
/// example key stay clean.
#[test]
fn oracle_statements_over_two_lines_and_python_printed_keys_are_found() {
    for (text, secret) in [
        (
            "CREATE USER billing_app\n    IDENTIFIED BY Hq3vT8wLp2Zk\n    QUOTA 50M ON users;",
            "Hq3vT8wLp2Zk",
        ),
        (
            "GRANT CREATE SESSION TO rpt IDENTIFIED BY Nw5xR9cJm4Tq;",
            "Nw5xR9cJm4Tq",
        ),
        (
            ">>> key.export(as_dict=True, private_key=True)\n{'kty': 'OKP', 'crv': 'Ed25519', 'x': 'Qz4Lm8VtR2yK7pWn3XcB9fHs6DjA1uGe5NoT0iYwE2r', 'd': 'Wb7Fq2Ks9Tz4Nx8Lr3Pm6Vh1Jc5Yd0Ge7Ua2Io9Xn4'}",
            "Wb7Fq2Ks9Tz4Nx8Lr3Pm6Vh1Jc5Yd0Ge7Ua2Io9Xn4",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text}");
    }
    assert_clean(&[
        "In this app every user is identified by DeviceToken7 rather than by email.",
        "the role table: each role identified by RoleKey42 in the cache",
        "{'kty': 'OKP', 'crv': 'Ed25519', 'x': 'Qz4Lm8VtR2yK7pWn3XcB9fHs6DjA1uGe5NoT0iYwE2r'}",
        // RFC 7517's example key, its private exponent before its modulus.
        "const rfcKey = {\"kty\":\"RSA\",\"d\":\"X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH-HLLKD9M7dx5oo7GURknchnrRweUkC7hT5fJLM0WbFAKNLWY2vv7B6NqXSzUvxT0_YSfqijwp3RTzlBaCxWp4doFk5N2o8Gy_nHNKroADIkJ46pRUohsXywbReAdYaMwFs9tv8d_cPVY3i07a3t8MN6TNwm0dSawm9v47UiCl3Sk5ZiG7xojPLu4sbg1U2jx4IBTNBznbJSzFHK66jT8bgkuqsk0GjskDJk19Z4qwjwbsnn4j2WBii3RL-Us2lGVkY8fkFzme1z0HbIkfz0Y6mqnOYtqc0X4jfcKoAC8Q\",\"e\":\"AQAB\",\"n\":\"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw\"};",
    ]);
    // The same members around another modulus are a key.
    let other = format!(
        "{{\"kty\":\"RSA\",\"d\":\"X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH-HLLKD9M7dx5oo7GURknchnrRweUkC7hT5fJLM0WbFAKNLWY2vv7B6NqXSzUvxT0_YSfqijwp3RTzlBaCxWp4doFk5N2o8Gy_nHNKroADIkJ46pRUohsXywbReAdYaMwFs9tv8d_cPVY3i07a3t8MN6TNwm0dSawm9v47UiCl3Sk5ZiG7xojPLu4sbg1U2jx4IBTNBznbJSzFHK66jT8bgkuqsk0GjskDJk19Z4qwjwbsnn4j2WBii3RL-Us2lGVkY8fkFzme1z0HbIkfz0Y6mqnOYtqc0X4jfcKoAC8Q\",\"n\":\"{}\"}}",
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw".replace("0vx7", "Qm7v")
    );
    assert_eq!(
        spans(&other),
        [
            "X4cTteJY_gn4FYPsXB8rdXix5vwsg1FLN5E3EaG6RJoVH-HLLKD9M7dx5oo7GURknchnrRweUkC7hT5fJLM0WbFAKNLWY2vv7B6NqXSzUvxT0_YSfqijwp3RTzlBaCxWp4doFk5N2o8Gy_nHNKroADIkJ46pRUohsXywbReAdYaMwFs9tv8d_cPVY3i07a3t8MN6TNwm0dSawm9v47UiCl3Sk5ZiG7xojPLu4sbg1U2jx4IBTNBznbJSzFHK66jT8bgkuqsk0GjskDJk19Z4qwjwbsnn4j2WBii3RL-Us2lGVkY8fkFzme1z0HbIkfz0Y6mqnOYtqc0X4jfcKoAC8Q"
        ]
    );
}

#[test]
fn strings_after_a_document_and_a_long_run_of_blanks_scan_in_linear_time() {
    // The blanks and commas after a document's string are read once, not again for each string
    // after them (before: 1.3 s for 200 KB).
    let (small, large) = scaling(|size| {
        let started = Instant::now();
        for prompt in [
            format!(
                "[\"line one\\nline two\"{},,{}]",
                " ".repeat(size / 2),
                "\"x\" ".repeat(size / 8)
            ),
            format!("[\"a\\nb\"{}{}]", ",".repeat(size / 2), "\"x\"".repeat(size / 6)),
        ] {
            let _ = findings(&prompt);
        }
        started.elapsed()
    });
    assert!(
        large < small * LINEAR_LIMIT,
        "{RUNS} x {SMALL} bytes took {small:?}, {LARGE} took {large:?}"
    );
}

#[test]
fn table_cells_nested_in_escaped_bars_scan_as_fast_as_one_row() {
    // A cell holding a row whose bars are escaped, level in level, is read as cells once: each
    // level read again was a pass over the whole text (before: 240 ms for 200 KB, 30 times a
    // row of the same size).
    let time = |prompt: &str| {
        (0..3)
            .map(|_| {
                let started = Instant::now();
                let _ = findings(prompt);
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let mut nested = String::from("|a<br>|");
    while nested.len() < 200_000 {
        nested = format!("|{}<br>|", nested.replace('|', "\\|"));
    }
    let flat = format!("|{}|", "a<br>\\|".repeat(nested.len() / 7));
    let (nested, flat) = (time(&nested), time(&flat).max(Duration::from_millis(1)));
    assert!(
        nested < flat * 8,
        "nested cells took {nested:?}, one row {flat:?}"
    );
}

#[test]
fn a_table_cell_broken_by_br_is_read_as_lines_once() {
    // A cell's lines are read (the key after `<br>`), a row escaped within a cell is its text.
    assert_eq!(
        spans("| env | value |\n|---|---|\n| prod | [db]<br>password = Vq7#mZ2xLp9Rt4 |"),
        ["Vq7#mZ2xLp9Rt4"]
    );
    assert!(spans("| step | note |\n| 1 | \\| a<br>b \\| c<br>d \\| |").is_empty());
}

/// A JSON Web Token whose signature ends in the documentation marker (`…EXAMPLE`, as example
/// generators write one) signs nothing, alone or under a key, and also when the token is longer
/// than the window a value is judged in; the same token with a signature of its own is caught.
#[test]
fn a_jwt_signed_with_the_documentation_marker_is_an_example() {
    let head = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjaS1ydW5uZXIiLCJpYXQiOjE3NjAwMDAwMDB9.gpZeYOl8eSAjD_WYxXqpPLh8acYJKZ4JMbqL";
    let payload = concat!(
        "eyJzdWIiOiJjaS1ydW5uZXIiLCJpYXQiOjE3NjAwMDAwMDAsInNjb3BlcyI6WyJyZXBvOnJlYWQiLCJyZXBvOndyaX",
        "RlIiwicGFja2FnZXM6cmVhZCIsInBhY2thZ2VzOndyaXRlIiwiZGVwbG95bWVudHM6d3JpdGUiLCJpc3N1ZXM6d3Jp",
        "dGUiXSwiYXVkIjoiaHR0cHM6Ly9idWlsZC5pbnRlcm5hbC50ZXN0L2FwaSIsImp0aSI6IjNlMjM4ZTNiMWM3N2ZjNG",
        "MwMTFmMWJkMzhmMWYzNDkyMGZiZDAxZjQwMDcyZTNjZjM0Nzg2MjU1NDAxN2NkZjgifQ",
    );
    let signature = concat!(
        "N81ljk6YC-JECSBLNaK2VNxk6-zY2gkLpoYjv9yzgwnKjNSRuGbHCPQiUrHwLmKu6AG5T_zJ3AOEwQEhgWLIFxJW9a",
        "pp8dY-3xZzMbnqr2YtbgtcUsSh5lm_eM9IjlWBl132zN4t8-wVxx2hDnk44CJxqviOstSP5SVG_lrtLgRWq2D8M3dZ",
        "E9N2CLDHt-7jzJYudEVWbjsmGLYu59fO95x07MvVP_dkohq9uodDFDfD2La2d-fnqeOq-_Xz90TXDEGVCu-g7Lj2M7",
        "ERv7XNUilOvgBUli4c0grWA9XED3xbyQPnNrnb7fiyNQDODRn1O5jQeT_Lrc",
    );
    let long = format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{payload}.{signature}");
    for (tail, caught) in [("EXAMPLE", false), ("Qv3Lk9w", true)] {
        for text in [
            format!("curl -H 'X-Session: {head}{tail}' https://build.internal.test"),
            format!("SESSION_TOKEN={head}{tail}"),
            format!("SESSION_TOKEN={long}{tail}"),
        ] {
            assert_eq!(!findings(&text).is_empty(), caught, "{text}");
        }
    }
}

/// The marker word in lowercase closing a long value (`…v5y0nexample`, `…_Example`: what
/// example generators write after a body without capitals), or spelt in capitals in a value
/// shorter than twenty (`SAMPLEDEPLOYKEY42`), is filler; a value that only nears it is not.
#[test]
fn the_marker_word_closing_a_value_or_in_a_short_one_is_filler() {
    assert_clean(&[
        "signing_token: \"t7k2m9x4q1z8w3r6v5y0nexample\"",
        "signing_token: \"t7k2m9x4q1z8w3r6v5y0n_Example\"",
        "DEPLOY_KEY=SAMPLEDEPLOYKEY42",
        "NETLIFY_TOKEN=EXAMPLENETLIFY7",
    ]);
    assert_eq!(
        spans("signing_token: \"t7k2m9x4q1z8w3r6v5y0nexamqle\""),
        ["t7k2m9x4q1z8w3r6v5y0nexamqle"]
    );
    assert_eq!(spans("NETLIFY_TOKEN=Q7xTk2NETLIFY7"), ["Q7xTk2NETLIFY7"]);
}

/// A path from the home directory or a relative one where a key goes (`~/.ssh/id_ed25519`,
/// `../certs/build01_ecdsa384`) names the key's file; a random value that only starts with `~`
/// is the key.
#[test]
fn a_home_or_relative_path_under_a_key_word_is_a_file() {
    for (text, caught) in [
        ("ssh_key: ~/.ssh/id_ed25519", false),
        ("key: ../certs/build01_ecdsa384", false),
        ("signing_key = ./keys/release_rsa4096", false),
        ("ssh_key: ~q2Lm8Rt4Vw7Yz3Bx6Nc", true),
    ] {
        assert_eq!(!findings(text).is_empty(), caught, "{text}");
    }
}

/// A random run after `./`, `../` or `~/` where a key goes is a key pasted after a path's start,
/// as after `/`; readable segments there name a file.
#[test]
fn a_random_run_after_a_relative_start_is_a_key() {
    for (text, caught) in [
        ("client_secret: ./Vb8Kq3Zt7Lm2Xw9Rn4Jc6Hy5", true),
        ("TOKEN=\"~/Pz7Wq2Lk9Rt4Mx8Nc3Vb6Yh\"", true),
        ("client_secret: ./conf/oauth_client_secret.json", false),
        ("TOKEN=~/Library/Keychains/login.keychain-db", false),
    ] {
        assert_eq!(!findings(text).is_empty(), caught, "{text}");
    }
}

/// A block under a key label with no standard form (`BEGIN TSS2 KEY`) whose body holds no line
/// of base64 (a sentence about the format) illustrates one; with a key's base64 body it is a key.
#[test]
fn a_nonstandard_key_block_of_words_is_an_illustration() {
    assert_clean(&[
        "-----BEGIN HSM KEY-----\nthe wrapped blob from your vendor's tool goes here\n-----END HSM KEY-----",
    ]);
    assert_kind(
        SecretKind::PrivateKey,
        &[
            "-----BEGIN HSM KEY-----\nq8Zt3Lm7Wv2Rk9Xp4Nc6Jy1Hb5Gd0Fs+Q8Zt3Lm7Wv2Rk9Xp4Nc6Jy1Hb5Gd0Fs/a\n-----END HSM KEY-----",
        ],
    );
}

/// A PGP key's id or fingerprint in hex under a key named for gpg or as trusted (a config's
/// `trusted_keys` list, `gpg_key`) is public; a long random value there is still a key.
#[test]
fn a_key_id_under_a_gpg_or_trusted_key_is_public() {
    assert_clean(&[
        "trusted_keys:\n  - 9F3C21A7B04E5D68C1F2A3B4C5D6E7F809A1B2C3\n  - 0x7E2D9A41C3B85F06",
        "gpg_key = \"0x4AEE18F83AFDEB23\"",
    ]);
    assert_spans(&[("gpg_key: Wq7Lm2Xz9Rt4Kp8Vb3Nc6Hy1", "Wq7Lm2Xz9Rt4Kp8Vb3Nc6Hy1")]);
}

/// A certificate pin (`sha256/` then a digest's base64, OkHttp's and HPKP's form) under a key
/// word, alone or in a list, is a public key's hash; a random run after another word is a key.
#[test]
fn a_certificate_pin_is_a_digest() {
    assert_clean(&[
        "pinned_keys:\n  - sha256/q9Zt3Lm7Wv2Rk9Xp4Nc6Jy1Hb5Gd0Fs+Q8Zt3Lm7Wv2R=",
        "secret: sha1/Rk9Xp4Nc6Jy1Hb5Gd0Fs+Q8Zt3L=",
    ]);
    assert_spans(&[(
        "secret: shard/q9Zt3Lm7Wv2Rk9Xp4Nc6Jy1Hb5Gd0Fs",
        "shard/q9Zt3Lm7Wv2Rk9Xp4Nc6Jy1Hb5Gd0Fs",
    )]);
}

/// `example` closes an example generator's value only after a body without capitals; after a
/// mixed-case body the letters are the token's own.
#[test]
fn example_closing_a_mixed_case_body_is_the_tokens_own() {
    assert_spans(&[(
        "deploy_token: Hq7Lm2Xz9RtK4pVb3Ncexample",
        "Hq7Lm2Xz9RtK4pVb3Ncexample",
    )]);
    assert_clean(&["deploy_token: hq7lm2xz9rtk4pvb3ncexample"]);
}

/// `psw` ending a key after an account's word glued to it (`rootpsw`) names that account's
/// password, as `pw` does; inside another word it names none.
#[test]
fn psw_glued_to_an_account_word_is_a_password() {
    assert_spans(&[("rootpsw=Hq7Lm2Xz9Rt4", "Hq7Lm2Xz9Rt4")]);
    assert_clean(&["upswing=Hq7Lm2Xz9Rt4"]);
}

/// `PW` glued to a tool's name in capitals ends an environment variable that holds its
/// password (`CRATEPW`, `ORACLEPW`); a reference there is none.
#[test]
fn pw_glued_to_a_capitalised_name_is_a_password() {
    assert_each_spans(&[
        ("REDISPW=c7Hq2Lm9Xz4Rt8", &["c7Hq2Lm9Xz4Rt8"][..]),
        ("export ORACLEPW=w3Rt9Kq2Xm7Lz", &["w3Rt9Kq2Xm7Lz"]),
        ("REDISPW=${REDIS_PASSWORD}", &[]),
        ("export ORACLEPW=\"$ORACLE_PASSWORD\"", &[]),
    ]);
}

/// A function of no arguments returning a literal under a key naming a secret (`() => '…'`,
/// Python's `lambda: '…'`) holds that literal; one returning a lookup or an expression holds none.
#[test]
fn a_function_returning_a_literal_holds_it() {
    assert_each_spans(&[
        (
            "  fetchToken: () => \"Rk4vQ9zL2mXw7Tp3Nc8Jy\",",
            &["Rk4vQ9zL2mXw7Tp3Nc8Jy"][..],
        ),
        (
            "const getApiKey = () => `Hq7Lm2Xz9Vw4Rt8Kp3Ny6`;",
            &["Hq7Lm2Xz9Vw4Rt8Kp3Ny6"],
        ),
        ("db_password = lambda: 'Tz8#qLm2Vx9!'", &["Tz8#qLm2Vx9!"]),
        ("  fetchToken: () => process.env.FETCH_TOKEN,", &[]),
        ("const getApiKey = () => config.get('api_key');", &[]),
        ("db_password = lambda: os.environ['DB_PASSWORD']", &[]),
    ]);
}

/// Text encoded for a URL or a form body is read decoded (a form's fields, a redirect's encoded
/// query); a search for the word password, or a stand-in there, is not a password.
#[test]
fn a_percent_encoded_word_is_read_decoded() {
    assert_eq!(
        spans("action=save&notes=deploy+notes%3A%0Adb_password%3DqT7vLm2xR9wK4pZs&lang=de"),
        ["qT7vLm2xR9wK4pZs"]
    );
    assert_eq!(
        spans(
            "https://login.example.com/cb?redirect=https%3A%2F%2Fapp.example.com%2F%3Fapi_key%3DZx8Qw3Lm7Np2Rt5Vb9Kc&state=af31"
        ),
        ["Zx8Qw3Lm7Np2Rt5Vb9Kc"]
    );
    // A field holding lines is a document: its first line starts after the field's name.
    assert_found(&[
        "https://chat.example.com/new?q=host%2Clogin%2Csecret%0Abuild%2Cci%2CWv3Lq8Tz2Xm7Rk9Np4Hc%0Awhich+one+is+stale%3F&lang=en",
    ]);
    assert_clean(&[
        "https://chat.example.com/new?q=host%2Clogin%2Csecret%0Abuild%2Cci%2Csee-vault%0Awhich+one+is+stale%3F&lang=en",
        "https://docs.example.org/search?q=how+to+rotate+the+password%3F&page=2",
        "https://login.example.com/cb?redirect=https%3A%2F%2Fapp.example.com%2F%3Fapi_key%3Dyour-api-key&state=af31",
        "the discount is 50%25 off, the password policy is 100% enforced",
    ]);
}

/// A field quoted with its quotes doubled inside (a CSV file's cell, SQL's string) and a CSV
/// cell spanning lines are read as their text; the same fields holding a field's name, an
/// apostrophe or a stand-in are not.
#[test]
fn a_field_with_doubled_quotes_is_read_as_its_text() {
    assert_eq!(
        spans(
            "id,body,when\n12,\"use \"\"client_secret\"\": \"\"Fq9Lx2Vm7Tz4Qw8Rn3Kc\"\" in the call\",2026-01-02"
        ),
        ["Fq9Lx2Vm7Tz4Qw8Rn3Kc"]
    );
    assert_eq!(
        spans("INSERT INTO notes VALUES (3, 'set api_token=''Hx7Pk2Wq9Lm4Tz8Vn3Rb'' then retry');"),
        ["Hx7Pk2Wq9Lm4Tz8Vn3Rb"]
    );
    assert_eq!(
        spans("var note = @\"the key: \"\"sk_test_ZQ8vLx3Tm9Rk2Wn7Pq4Hc6Yd\"\"\";"),
        ["sk_test_ZQ8vLx3Tm9Rk2Wn7Pq4Hc6Yd"]
    );
    assert_found(&[
        "id,prompt,tag\n4,\"first line\nSECRET_KEY=Vq8Lz3Nx6Tm2Wk9Pr5Hc\",x",
        // A document quoted after a separator: its first line starts after the quote.
        "var doc = @\"host,login,secret\nbuild,ci,Wv3Lq8Tz2Xm7Rk9Np4Hc\nwhich one is stale?\";",
        "a:1:{s:4:\"note\";s:60:\"- password: kvqz-trml-wxnp\nthat is the staging one\";}",
    ]);
    assert_clean(&[
        "id,body,when\n12,\"the \"\"password\"\" field is required\",2026-01-02",
        "INSERT INTO notes VALUES (3, 'it''s the token''s name, see ''docs''');",
        "id,prompt,tag\n4,\"first line\nSECRET_KEY=changeme\",x",
        "def f():\n    \"\"\"Return the token \"\"\"\n    return \"\"",
        "var doc = @\"host,login,secret\nbuild,ci,see-vault\nwhich one is stale?\";",
        "a:1:{s:4:\"note\";s:60:\"- password: required\nthat is the staging one\";}",
    ]);
}

/// A mail's part in quoted-printable is read decoded (its `=3D`, its soft line breaks); a
/// stand-in there is no password.
#[test]
fn a_quoted_printable_mail_part_is_read_decoded() {
    let head = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n";
    assert_eq!(
        spans(&format!(
            "{head}the new db_password=3DRk4Tn8Vq2Lx7Mz9Pw please update the vault to match=\n it"
        )),
        ["Rk4Tn8Vq2Lx7Mz9Pw"]
    );
    assert_eq!(
        spans(&format!(
            "{head}please rotate it, the old api key was Wq7Lx2Tm9Rk4Vz8Nc3Hp5Yd, it is now r=\nevoked"
        )),
        ["Wq7Lx2Tm9Rk4Vz8Nc3Hp5Yd"]
    );
    assert_clean(&[
        &format!(
            "{head}the new db_password=3Dchangeme please update the vault to match the new one=\n today"
        ),
        &format!("{head}caf=C3=A9 password reset page: the token expires after 10 minutes"),
    ]);
}

/// Typography an input method or a chat app puts in (a full-width colon or equals sign, curly
/// quotes, no-break and zero-width spaces) and a terminal's colour codes are read as the ASCII
/// they stand for; the same around a stand-in or in a sentence is not a secret.
#[test]
fn typography_and_colour_codes_read_as_ascii() {
    for (text, secret) in [
        ("API_TOKEN＝Hq3Vx8Lm2Tz7Kw9R", "Hq3Vx8Lm2Tz7Kw9R"),
        ("client_secret = “Nv6Kq2Xm9Lt4Rz8W”", "Nv6Kq2Xm9Lt4Rz8W"),
        ("export\u{a0}DB_PASSWORD=Lm7Qx2Vt9Kr4Wz8N", "Lm7Qx2Vt9Kr4Wz8N"),
        ("\u{200b}token=Pm4Xq9Lv2Tk7Rz3N", "Pm4Xq9Lv2Tk7Rz3N"),
        // A literal passed to what the key names, curly-quoted or with blanks inside the call.
        ("pool.setPassword(“Wn4Kq8Lx2Tz7”);", "Wn4Kq8Lx2Tz7"),
        ("pool.setPassword( \"Wn4Kq8Lx2Tz7\" );", "Wn4Kq8Lx2Tz7"),
        (
            "\u{1b}[32mAPI_KEY=Gx7Lm2Qv9Tk4Rz8Nw\u{1b}[0m",
            "Gx7Lm2Qv9Tk4Rz8Nw",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text:?}");
    }
    // A PEM block whose label's spaces are no-break ones (copied from a wiki page).
    let body = "MIIEowIBAAKCAQEAq7Lm2Vx9Tk4Rz8Nw3Hc6Yd5Fb1Gs0JaPq4Wz7Xn2Kv8Tm3Lr9\nRz5Yb2Nc7Hd4Jf6Kg8Lh1Mj3Np5Qr7St9Uv2Wx4Yz6Ab8Cd0Ef2Gh4Ij6Kl8Mn0";
    let nbsp = |label: &str| label.replace(' ', "\u{a0}");
    let (begin, end) = (
        nbsp("-----BEGIN RSA PRIVATE KEY-----"),
        nbsp("-----END RSA PRIVATE KEY-----"),
    );
    let block = format!("{begin}\n{body}\n{end}");
    assert_eq!(spans(&block), [block.as_str()]);
    assert_clean(&[&format!("{begin}\n...\n{end}")]);
    assert_clean(&[
        "password：required",
        "pool.setPassword( \"changeme\" );",
        "pool.setPassword(“your-password”);",
        "client_secret = “client-secret-here”",
        "it’s a token＝based login",
        "\u{1b}[32mAPI_KEY=changeme\u{1b}[0m",
        "the\u{a0}password\u{a0}field\u{a0}is\u{a0}required",
    ]);
}

/// A line break written as a character reference inside an attribute, a CI runner's ISO time
/// before each line, an XML attribute's end, a serialized string's `";}` and a chat's backticks
/// frame a value as the text's own layout; a stand-in in the same frame is none.
#[test]
fn values_framed_by_attributes_logs_and_backticks() {
    for (text, secret) in [
        (
            "<input value=\"[db]&#10;password = Kv8Tq3Lm7Xz2Rw9N&#10;\">",
            "Kv8Tq3Lm7Xz2Rw9N",
        ),
        (
            "2026-05-01T08:00:01.5000000Z   - password: wrkl-qzpv-mtnx\n",
            "wrkl-qzpv-mtnx",
        ),
        ("<entry note=\"token=Zq8Lm3Vx7Tk2Rw9N\"/>", "Zq8Lm3Vx7Tk2Rw9N"),
        (
            "a:1:{s:6:\"prompt\";s:33:\"my password is Jk8Vq3Lx9Tm2Rz7W\";}",
            "Jk8Vq3Lx9Tm2Rz7W",
        ),
        (
            "hey, can you check `my password is Hv7Tq2Lx9Km4Rz8W` thanks",
            "Hv7Tq2Lx9Km4Rz8W",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text:?}");
    }
    assert_clean(&[
        "<input value=\"[db]&#10;password = &#10;user = admin\">",
        "2026-05-01T08:00:01.5000000Z   password: required",
        "<entry note=\"token=None\"/>",
        "a:1:{s:6:\"prompt\";s:20:\"my password is weak\";}",
        "hey, can you check ```api_key = YOUR_KEY_HERE``` thanks",
    ]);
}

/// Only a fence's run of backticks closes as one quote: an escaped quote before a string's own
/// closing quote (`\"…\""`) still ends the value where it did, so a C define written into a
/// string keeps its password; an empty or numeric one there is none.
#[test]
fn a_run_of_quotes_other_than_backticks_is_not_one_closing_quote() {
    assert_eq!(
        spans(r##"out.write("#define\tDB_PASSWORD\t\"Zq4Wm8Lr2Tx\"")"##),
        [r##"\"Zq4Wm8Lr2Tx\""##]
    );
    assert_clean(&[
        r##""#define\tpassword\t\"\"","##,
        r##""#define\tpassword_len\t\"16\"""##,
    ]);
}

/// The second readings' openings repeated (percent escapes, doubled quotes, quotes after
/// separators, quoted-printable escapes, typography) read in linear time.
#[test]
fn second_readings_scan_in_linear_time() {
    let head = "Content-Transfer-Encoding: quoted-printable\n\n";
    let (small, large) = scaling(|size| {
        let started = Instant::now();
        for prompt in [
            "%3D".repeat(size / 3),
            "a%3Db ".repeat(size / 6),
            ",\"".repeat(size / 2),
            ",\"a\"\"b\" ".repeat(size / 9),
            "''".repeat(size / 2),
            format!("{head}{}", "=3D=\n".repeat(size / 5)),
            "“：＝\u{a0}".repeat(size / 11),
            // One field of a query holding many names' `=` and one escape.
            format!("{}%20", "?=".repeat(size / 2)),
            "%2C ".repeat(size / 4),
        ] {
            let _ = findings(&prompt);
        }
        started.elapsed()
    });
    assert!(
        large < small * LINEAR_LIMIT,
        "{RUNS} x {SMALL} bytes took {small:?}, {LARGE} took {large:?}"
    );
}

/// Slots the key readers once passed over: `psw` as a key's segment, a secret id that is a UUID
/// (Vault's AppRole login), a user and its password split by a spaced slash after a
/// credentials' word, a JSON Web Key written as YAML, and a .NET `<DSAKeyValue>`'s private `<X>`.
/// Their look-alikes stay clean: a word holding `psw`, a request's or a stored secret's id, words
/// either side of a slash, a YAML key's public members, a sentence naming `d:`, a DSA key's public
/// parameters.
#[test]
fn short_password_keys_secret_ids_spaced_pairs_and_key_documents_are_found() {
    assert_spans(&[
        ("export MAIL_PSW=XG4LcLlkyWDh", "XG4LcLlkyWDh"),
        ("psw: QwI1dEvVkvk7", "QwI1dEvVkvk7"),
        (
            "vault write auth/approle/login role_id=74563f19-54e1-4316-9482-4b4bf0c571df secret_id=b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78",
            "b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78",
        ),
        (
            "{\"roleId\": \"74563f19-54e1-4316-9482-4b4bf0c571df\", \"secretId\": \"b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78\"}",
            "b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78",
        ),
        ("staging creds: ops / Y2v-7iBEiU (rotate monthly)", "Y2v-7iBEiU"),
        ("credentials: deploy / XG4LcLlkyWDh", "XG4LcLlkyWDh"),
        (
            "signing:\n  kty: OKP\n  crv: Ed25519\n  x: nAQT4CJgGBC7pnUlkn3cY1b5dsR2\n  d: 8ZXfRPYJk6VYKrjyN4tclev56efYriBCSjkCrYuMQg8",
            "8ZXfRPYJk6VYKrjyN4tclev56efYriBCSjkCrYuMQg8",
        ),
        (
            "keys:\n  - kty: EC\n    crv: P-256\n    d: 'w7OfRx8bMeQsNf4nu5X70CqoCj_19aZroSUXKy7jUJ3'\n  - kty: oct",
            "w7OfRx8bMeQsNf4nu5X70CqoCj_19aZroSUXKy7jUJ3",
        ),
        (
            "<DSAKeyValue><P>wh+gb2D3b15nvq4jRUuJErNM4tQ=</P><Y>nAQT4CJgGBC7pnUlkn3cY1b5dsR2</Y><X>wh+gb2D3b15nvq4jRUuJErNM4tQ=</X></DSAKeyValue>",
            "wh+gb2D3b15nvq4jRUuJErNM4tQ=",
        ),
    ]);
    assert_clean(&[
        "the upswing=XG4LcLlkyWDh was measured",
        "request_id: b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78",
        "secret_id_accessor: b6a7fc55-cff0-4fbb-b73f-b3ef0f3e0d78",
        "secret_id = \"prod/billing/db-password\"",
        "creds: read / write",
        "credentials: see the vault / ask ops",
        "creds: admin / $ADMIN_PASSWORD",
        "jwk:\n  kty: EC\n  crv: P-256\n  x: nAQT4CJgGBC7pnUlkn3cY1b5dsR2\n  y: w7OfRx8bMeQsNf4nu5X70CqoCj_19aZroSUXKy7jUJ3",
        "the members are kty: the family\nd: the private exponent, 8ZXfRPYJk6VYKrjyN4tclev56efYriBCSjkCrYuMQg8 for example",
        "<DSAKeyValue><P>wh+gb2D3b15nvq4jRUuJErNM4tQ=</P><Y>nAQT4CJgGBC7pnUlkn3cY1b5dsR2</Y></DSAKeyValue>",
    ]);
}

/// A long run of `kty:` lines, each a mapping's first line, reads each line's neighbours a bounded
/// number of times.
#[test]
fn repeated_yaml_key_members_scan_in_linear_time() {
    assert_findings_linear(|size| {
        vec![
            "  kty: EC\n".repeat(size / 10),
            "- kty: EC\n  d: 8ZXfRPYJk6VYKrjyN4tclev56efYriBCSjkCrYuMQg8\n".repeat(size / 56),
        ]
    });
}

/// Password slots spelt as notes and SQL write them: an account's word glued to `PW` (`DBPW`,
/// `ADMINPW`), Korean's short word for password (`비번`), and SQL's `PASSWORD` function with a
/// blank before its parenthesis. A word that starts with `pwd` (`pwdump`), `PW` inside another
/// word and a function's name in lowercase prose stay clean.
#[test]
fn owned_pw_keys_korean_short_words_and_spaced_sql_functions_are_found() {
    assert_spans(&[
        ("ADMINPW=QwI1dEvVkvk7", "QwI1dEvVkvk7"),
        ("set rootPw: XG4LcLlkyWDh in the chart", "XG4LcLlkyWDh"),
        ("서버 비번: Y2v-7iBEiU", "Y2v-7iBEiU"),
        (
            "ALTER USER report SET PASSWORD = PASSWORD ('XG4LcLlkyWDh');",
            "XG4LcLlkyWDh",
        ),
    ]);
    assert_clean(&[
        "pwdump=QwI1dEvVkvk7",
        "PWDUMP_ARGS=QwI1dEvVkvk7",
        "UPWIND=QwI1dEvVkvk7",
        "call the reset password ('forgot') endpoint",
        "서버 비번: ${SERVER_PASSWORD}",
    ]);
}

/// NATS seeds and New Relic license keys have no prefix before their random part: a seed opens
/// with its kind's three letters (`SUA`, `SAA`, `SOA`), a license key ends with `NRAL`. Words
/// in capitals that open so, and filler, stay clean.
#[test]
fn nats_seeds_and_new_relic_license_keys_are_found() {
    assert_spans(&[
        (
            "nkey: SUAK6MBS2XQXNIRTA4PEZ3QQ5TF3JLVGSCF2Z6DQMSU3FFUNYP5KUU7FLY",
            "SUAK6MBS2XQXNIRTA4PEZ3QQ5TF3JLVGSCF2Z6DQMSU3FFUNYP5KUU7FLY",
        ),
        (
            "the agent sent fe4ab5325e06b5b3872662e0e252f676e1c8NRAL and got 403",
            "fe4ab5325e06b5b3872662e0e252f676e1c8NRAL",
        ),
    ]);
    assert_clean(&[
        "SOAP_PASSWORD_FIELD_IS_NOT_USED_IN_THIS_SERVICE_ANY_MORE_OK",
        "the NRAL suffix marks a license key",
        "0000000000000000000000000000000000000000NRAL",
    ]);
}

/// A list under a key ending with its secret word holds that key's values: a YAML sequence or an
/// array of strings under `passwords` holds passwords, under `tokens` or `api_keys` generated
/// items. A list of a validator's weak or banned passwords, names of secrets under `secrets`, a
/// key's operations, and the next line's setting after an empty `KEY=` stay clean.
#[test]
fn list_items_under_a_secret_key_are_its_values() {
    assert_spans(&[
        ("smtp_passwords:\n  - Marmot7harbor", "Marmot7harbor"),
        ("\"ftpPasswords\": [\n  \"Quillon42rest\"\n]", "Quillon42rest"),
        ("deploy_tokens = ['Y2v-7iBEiU4xQmZ8', 'dev']", "Y2v-7iBEiU4xQmZ8"),
        ("api_keys:\n- QwI1dEvVkvk7XG4LcLlk", "QwI1dEvVkvk7XG4LcLlk"),
    ]);
    assert_clean(&[
        "BANNED_PASSWORDS = [\"sunshine\", \"trustno1\", \"iloveyou\"]",
        "secrets:\n  - billing-db-credentials\n  - mailer-api-token",
        "SIGNING_KEY_USES = [\"sign\", \"verify\"]",
        "environment:\n  - SMTP_PASSWORD=\n  - SMTP_HOST=mail.internal",
        "tokens: []",
    ]);
}

/// A run of list items after secret keys is read a bounded number of items per key.
#[test]
fn list_items_under_secret_keys_scan_in_linear_time() {
    assert_findings_linear(|size| {
        vec![
            "passwords:\n".to_string() + &"  - Marmot7harbor\n".repeat(size / 18),
            "passwords:\n- a\n".repeat(size / 16),
            format!("tokens = [{}]", "\"x\", ".repeat(size / 5)),
        ]
    });
}

/// Values judged wrongly by their shape: a generated password that starts with `+` is a literal,
/// not a concatenation; a session cookie holding a stand-in, digits between runs of `x` and a
/// SealedSecret's encrypted values (made to be committed) are no credentials. Their look-alikes
/// stay as they were: a concatenation, a session cookie's generated value, a password with `x`s
/// in it, and a plain Secret's values.
#[test]
fn plus_led_passwords_stand_in_cookies_masks_and_sealed_values_are_judged_by_class() {
    assert_spans(&[
        ("db_password: \"+Qw7vLm2#Zk9-xR4tNp\"", "+Qw7vLm2#Zk9-xR4tNp"),
        (
            "Cookie: session_id=Y2v7iBEiU4xQmZ8n",
            "session_id=Y2v7iBEiU4xQmZ8n",
        ),
        ("api_token = 'x7xx9x3x4x5x6x1k'", "x7xx9x3x4x5x6x1k"),
        (
            "kind: Secret\nmetadata:\n  name: encryptedData-demo\nstringData:\n  password: Marmot7harbor",
            "Marmot7harbor",
        ),
    ]);
    assert_clean(&[
        "String url = \"/login?password=\"+pwField+\"&remember=1\";",
        "Cookie: session_id=dummy",
        "auth_token: xxx20xxx48xxx9",
        "kind: SealedSecret\nmetadata:\n  name: db\nspec:\n  encryptedData:\n    password: AgCx0Fh7Lq2vNw9RtYb3ZpKm8sJd4GeUoW1iXn6TyHc5VrAl+QfE/uBkSzP7Mg==\n    token: AgB4nR8wLm2Qv7Xk9Zt3Yp6Hc1Jd5Fs0GeUoWiTyNbVrAlQfEuBkSzPMgxCh==",
    ]);
}

/// A password given to `ConvertTo-SecureString` without `-AsPlainText` is still typed there, and
/// a PEM block labelled as a key with no standard label (`RSA KEY`, `EC KEY`) holds a private
/// key. An encrypted standard string (DPAPI's hex), a variable, a public key's block and a
/// sentence naming the markers stay clean.
#[test]
fn secure_strings_without_the_switch_and_unlabelled_key_blocks_are_found() {
    assert_spans(&[
        ("$pw = ConvertTo-SecureString 'Marmot7harbor!'", "Marmot7harbor!"),
        (
            "-----BEGIN EC KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5xkDcO6BwJ2T1oAoGCCqGSM49\nAwEHoUQDQgAEZ7vLsr1w9D3Oe4AYQMBkIkyeMWk7qrRLQrwpF8sAnCEpf4qU3tVY\n-----END EC KEY-----",
            "-----BEGIN EC KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5xkDcO6BwJ2T1oAoGCCqGSM49\nAwEHoUQDQgAEZ7vLsr1w9D3Oe4AYQMBkIkyeMWk7qrRLQrwpF8sAnCEpf4qU3tVY\n-----END EC KEY-----",
        ),
    ]);
    assert_clean(&[
        "$pw = ConvertTo-SecureString '01000000d08c9ddf0115d1118c7a00c04fc297eb0100000054a5e4d1c1b3f78a'",
        "$pw = ConvertTo-SecureString $encrypted -Key $aesKey",
        "-----BEGIN RSA PUBLIC KEY-----\nMEgCQQCo9+BpMRYQ/dL3DS2CyJxRF+j6ctbT3/Qp84+KeFhnii7NT7fELilKUSnx\n-----END RSA PUBLIC KEY-----",
        "a block opens with -----BEGIN EC KEY----- and closes with -----END EC KEY-----",
    ]);
}

/// A vendor's prefix before a hex body that names a file in a path (`cache/cosmo_<md5>.json`) is
/// a digest naming the file; the same token in a sentence or a generated body in a file's name
/// is still a key.
#[test]
fn a_prefixed_digest_naming_a_file_is_no_key() {
    assert_clean(&["ls out/cosmo_3f1a9c0e7b2d4f6a8c1e3b5d7f9a0c2e.log"]);
    assert_spans(&[
        (
            "the key was cosmo_3f1a9c0e7b2d4f6a8c1e3b5d7f9a0c2e all along",
            "cosmo_3f1a9c0e7b2d4f6a8c1e3b5d7f9a0c2e",
        ),
        (
            "cat /tmp/ghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP.txt",
            "ghp_nMGFvCxfG3y9ahvZTSNvQJjHU9Ru3lgaVYHP",
        ),
    ]);
}

/// After a label naming an id and a password together (`ID/PW`, `ID PW`, `ID&PWD`), a user and
/// its password, split by a slash, a colon or blanks, or in parentheses. The label in a
/// sentence, a word that ends in `id`, and a user with a stand-in stay clean.
#[test]
fn a_user_and_password_after_an_id_and_password_label_are_found() {
    assert_spans(&[
        ("staging box ID/PW: ops.admin / Rk7#vLq2wZ", "Rk7#vLq2wZ"),
        ("- jenkins (ID&PW) builder:Marmot7harbor!", "Marmot7harbor!"),
        ("id pw deploy Y2v-7iBEiU", "Y2v-7iBEiU"),
    ]);
    assert_clean(&[
        "ID/PW are checked against LDAP",
        "please type your id/pw in the form below",
        "paid PW deploy Y2v-7iBEiU",
        "ID/PW: admin / ${ADMIN_PASSWORD}",
    ]);
}

/// An element holds one text: named by a password's plural (`<smtp_passwords>`) it holds one
/// password, a weak literal too. A count there and a word naming a setting stay clean.
#[test]
fn an_element_named_by_a_passwords_plural_holds_one_password() {
    assert_spans(&[("<smtp_passwords>Harbor2024</smtp_passwords>", "Harbor2024")]);
    assert_clean(&[
        "<passwords>3</passwords>",
        "<min_passwords>required</min_passwords>",
    ]);
}

/// A credential class's password may stand fourth (sbt's `Credentials(realm, host, user,
/// password)`); a fourth argument that is a name or a reference stays clean.
#[test]
fn a_credential_classes_fourth_argument_may_be_its_password() {
    assert_spans(&[(
        "credentials += Credentials(\"Artifactory Realm\", \"repo.corp\", \"ci\", \"Y2v-7iBEiU4xQ\")",
        "Y2v-7iBEiU4xQ",
    )]);
    assert_clean(&[
        "credentials += Credentials(\"Artifactory Realm\", \"repo.corp\", \"ci\", sys.env(\"REPO_PASS\"))",
        "new NetworkCredential(user, password, \"CORP\")",
    ]);
}

/// A creation token is AWS's idempotency string for creating a resource, no credential; a
/// password or a secret named for creation still is one.
#[test]
fn a_creation_token_is_an_idempotency_string() {
    assert_clean(&[
        "resource \"aws_efs_file_system\" \"logs\" {\n  creation_token = \"logs-fs-Q7v2Lm9x\"\n}",
    ]);
    assert_spans(&[("creation_secret = \"Y2v-7iBEiU4xQ\"", "Y2v-7iBEiU4xQ")]);
}

/// A key with `mode` or `class` before its secret word still names the secret.
#[test]
fn a_secret_after_a_mode_or_a_class_word_is_caught() {
    assert_found(&[
        "  \"delivery_mode_token\": \"Gf8wNq2Lz7RkP4sXc9Tm\",",
        "oauth2_class_secret = Hq7Vz2Lm9XwRt4Kp",
    ]);
}

/// A count between words is a placeholder's only in capitals; mixed case is a password's.
#[test]
fn a_password_of_words_and_a_count_is_caught() {
    assert_found(&["$ mysql -u root --password Spring_24_Rollout"]);
}

/// Random letters unquoted in code have short humps, not words: still a value.
#[test]
fn random_camel_humps_unquoted_in_code_are_caught() {
    assert_found(&[
        "\tsrv := Server{Token: xkR4mPq9ZtLw2Nc7, Addr: \":8080\"}",
        "\topts := Options{Key: aB3xKpQ9mZtW8vYe}",
    ]);
}

/// A generated password glued to a template's tag is still one.
#[test]
fn a_password_before_a_template_tag_is_caught() {
    assert_found(&["{% comment %}password Kx9mQ2zLp7{% endcomment %}"]);
}

/// A password on the line after sops' encrypted comment is still one.
#[test]
fn a_password_after_a_sops_comment_is_caught() {
    assert_found(&[
        "#ENC[AES256_GCM,data:q8Zr0pWD7Lk2Vb9xNc4T,iv:W9ZtQx3LmR7vYp2KsN8cBd6HfJ1gUe5aXo4iTr0wEyk=,tag:Pn3Xk9Lq2Vz7Rt5Wm1Yb8A==,type:comment]\npassword: Kx9mQ2zLp7Rw",
    ]);
}

/// A credential after a URN in the same form body is still one.
#[test]
fn a_secret_after_a_urn_is_caught() {
    assert_found(&[
        "curl -d \"grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token=Kx9mQ2zLp7RwT4vBq8Zs\" https://idp/token",
        "body := \"grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&client_secret=Hq7Vz2Lm9XwRt4KpYc3N\"",
    ]);
}

/// Past the first few parts read again, the rest are read together: an encoded credential or a
/// quoted one far down a long export is still found, where it stands, and ordinary parts stay
/// ordinary however many there are.
#[test]
fn many_second_readings_read_together() {
    let rows: String = (0..40)
        .map(|i| format!("{i},\"say \"\"hi\"\" to row {i}\",ok\n"))
        .collect();
    let secret = "Vt3Qm8Lx2Rk7Wz4N";
    let text = format!("id,note,state\n{rows}41,\"{{\"\"api_key\"\": \"\"{secret}\"\"}}\",ok\n");
    assert_eq!(spans(&text), [secret]);
    assert_clean(&[&format!("id,note,state\n{rows}")]);
    let words: String = (0..40).map(|i| format!("q{i}=a%2Cb ")).collect();
    let text = format!("{words}next=%2Fcb%3Fapi_key%3D{secret} done");
    assert_eq!(spans(&text), [secret]);
    assert_clean(&[&words]);
}

/// A relative path's dot before a random value does not make it a path (`./kR4…` is still
/// judged), and a design system's token holding a CSS colour or function is a style, however it
/// is written (`primaryToken: () => '#1f2937'`).
#[test]
fn relative_random_values_and_css_token_values() {
    assert_found(&[
        "signing_secret = ./Hq7Lm2Xz9Vw4Rt8Kp3Ny6Bd",
        "api_token: ../Zr5Tq8Wm2Lx7Vk4Np9Hc3Jf",
    ]);
    assert_clean(&[
        "signing_secret = ./config/keys/signing.pem",
        "api_token: ../shared/tokens/ci_token.txt",
        "  accentToken: () => '#0ea5e9',",
        "borderToken = 'rgba(15, 23, 42, 0.08)'",
        "const focusRingToken = () => 'var(--ring-color-primary)';",
        "token_overlay: hsl(220 14% 96%)",
    ]);
    assert_eq!(spans("primaryToken: '#Qx8vLm2Tz9Rk'"), ["#Qx8vLm2Tz9Rk"]);
    assert_eq!(spans("password: '#abc123'"), ["#abc123"]);
}

/// A function of no arguments returning a literal holds it whatever the language writes it as:
/// `async` in JavaScript, an arrow `->` in Java or Kotlin, a blank before Python's colon.
#[test]
fn returned_literals_in_more_languages() {
    assert_each_spans(&[
        (
            "const getToken = async () => 'Wp4Rt8Kq2Lx7Vz3N';",
            &["Wp4Rt8Kq2Lx7Vz3N"][..],
        ),
        (
            "Supplier<String> apiKey = () -> \"Tz9Hq3Lm8Xv2Rk7W\";",
            &["Tz9Hq3Lm8Xv2Rk7W"],
        ),
        ("DB_PASSWORD = lambda : 'Nc4Vz8Qt2Lm7'", &["Nc4Vz8Qt2Lm7"]),
        ("const getToken = async () => 'Bearer';", &[]),
        ("Supplier<String> apiKey = () -> System.getenv(\"API_KEY\");", &[]),
        ("DB_PASSWORD = lambda : os.environ['DB_PASSWORD']", &[]),
    ]);
}

/// A prompt holding a quoted-printable mail part is read as it stands too: a line pasted below
/// the mail whose `=` and the two characters after it read as an escape (`API_TOKEN=41…`, a
/// `TOKEN=` ending its line) still holds its value.
#[test]
fn text_around_a_quoted_printable_part_is_read_as_written() {
    let head = "Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\nfwd below\n\n";
    assert_eq!(
        spans(&format!(
            "{head}my .env:\nAPI_TOKEN=41xYq8Lm2Tz9Rk4Wn7Vb3\nHOST=db1"
        )),
        ["41xYq8Lm2Tz9Rk4Wn7Vb3"]
    );
    assert_eq!(
        spans(&format!(
            "{head}GITHUB_TOKEN=\nAWS_SECRET_ACCESS_KEY=4FwJalrXUtnFEMIK7MDENGbPxRfiCYq8Lm2Tz9Rk"
        )),
        ["4FwJalrXUtnFEMIK7MDENGbPxRfiCYq8Lm2Tz9Rk"]
    );
    assert_clean(&[
        &format!("{head}my .env:\nAPI_TOKEN=3D${{API_TOKEN}}\nHOST=db1"),
        &format!("{head}<a href=3D\"https://t.example.net/c?upn=3Dq8Lm2Tz9Rk4Wn7Vb3Yc6Fd1Gs0Ja\">reset</a>"),
    ]);
}

/// A full-width blank typed by an input method separates a key from its value as a blank does,
/// and Japanese prose spaced with it stays prose.
#[test]
fn full_width_blanks_read_as_blanks() {
    assert_eq!(
        spans("パスワード\u{3000}password\u{3000}Hq4Lm8Tz2Xv7Rk"),
        ["Hq4Lm8Tz2Xv7Rk"]
    );
    assert_eq!(spans("密码\u{3000}Vz6Tq2Lm9Xk4Rw"), ["Vz6Tq2Lm9Xk4Rw"]);
    assert_eq!(
        spans("DB_PASSWORD\u{3000}=\u{3000}Wn3Kq7Lx2Tz9"),
        ["Wn3Kq7Lx2Tz9"]
    );
    assert_clean(&[
        "パスワード\u{3000}は\u{3000}８文字以上です。\u{3000}token\u{3000}の有効期限は１時間。",
        "password\u{3000}required",
    ]);
}

/// Distinct bytes are counted with case aside, and no further than one past the cap: a value
/// of two bytes in turn is a stand-in's shape, a generated one passes the cap at once.
#[test]
fn distinct_bytes_are_counted_case_aside_up_to_a_cap() {
    use crate::chars::distinct_folded;
    assert_eq!(distinct_folded(b"qQqQzZzZ", 3), 2);
    assert_eq!(distinct_folded(b"", 3), 0);
    assert_eq!(distinct_folded(b"k7Mw2Rp9Xv", 3), 4);
    assert_eq!(distinct_folded(b"k7Mw2Rp9Xv", 16), 10);
    // The shape it decides: a stand-in of two letters in any case, not a generated value.
    assert!(crate::judge::is_placeholder(b"qQqQzZzZqQ"));
    assert!(!crate::judge::is_placeholder(b"k7Mw2Rp9XvT4"));
}

/// Stand-in words are told in ASCII and in other scripts alike; a byte that is neither a
/// letter, a digit nor a separator between words (ASCII or not) makes the value no stand-in.
#[test]
fn stand_in_words_take_letters_of_any_script_and_nothing_else() {
    use crate::judge::placeholder_words;
    assert!(placeholder_words(b"put_your_key_here"));
    assert!(placeholder_words("ingrese_su_token_aqu\u{ed}".as_bytes()));
    assert!(!placeholder_words(b"put_your;key_here"));
    assert!(!placeholder_words("put_your_key\u{2192}here".as_bytes()));
}

/// `holds` is true of every text in `yes` and of none in `no`.
fn holds_exactly(holds: impl Fn(&[u8]) -> bool, yes: &[&[u8]], no: &[&[u8]]) {
    for t in yes {
        assert!(holds(t), "{:?}", String::from_utf8_lossy(t));
    }
    for t in no {
        assert!(!holds(t), "{:?}", String::from_utf8_lossy(t));
    }
}

/// A list of prefixes starts a value only with one of its words as written: the case counts,
/// the word may be the whole value, and a word the value merely holds elsewhere starts nothing.
#[test]
fn a_list_of_prefixes_starts_a_value_exactly() {
    use crate::words::{Words, words_from, words_of};
    const HEADS: Words = words_of!(b"cfg. Cfg:: env! qz");
    holds_exactly(
        |v| HEADS.starts(v),
        &[b"cfg.db_pass", b"Cfg::Secret", b"env!", b"qzX81"],
        &[
            b"CFG.db_pass",
            b"cfg",
            b"my_cfg.db_pass",
            b"env",
            b"Qz",
            b"q",
            b"",
        ],
    );
    // An empty word starts every value, the empty one too; a one-byte word starts its own.
    const ANY: Words = words_from!(&[b"#", b""]);
    assert!(ANY.starts(b"") && ANY.starts(b"k7") && ANY.starts(b"#"));
    const HASH: Words = words_from!(&[b"#"]);
    assert!(HASH.starts(b"#x") && !HASH.starts(b"x#") && !HASH.starts(b""));
}

/// A list packed at compile time ([`crate::words::words_from`]) reads back every entry, in
/// order, the empty one and one with a space included; the largest tables read back whole.
#[test]
fn a_packed_list_reads_back_every_entry_in_order() {
    use crate::words::{Words, words_from, words_of};
    const LIST: Words = words_from!(&[b"first", b"", b"two words", b"\xe2\x80\xa6", b"x", b"first"]);
    let want: [&[u8]; 6] = [b"first", b"", b"two words", b"\xe2\x80\xa6", b"x", b"first"];
    assert_eq!(LIST.iter().collect::<Vec<_>>(), want);
    assert_eq!(LIST.len(), want.len());
    for (k, w) in want.iter().enumerate() {
        assert_eq!(LIST.get(k), *w);
        assert!(LIST.contains(w));
    }
    assert!(!LIST.contains(b"firs") && !LIST.contains(b"two"));
    // Looked up by first byte, any case: whole entries only, the empty one too.
    for w in [&b"FIRST"[..], b"Two Words", b"", b"\xe2\x80\xa6", b"X"] {
        assert!(LIST.contains_ci(w), "{w:?}");
    }
    for w in [&b"firsts"[..], b"two", b"y", b"\xe2\x80"] {
        assert!(!LIST.contains_ci(w), "{w:?}");
    }
    // Found anywhere in a text, short (read byte by byte) or long (searched word by word).
    const MARKS: Words = words_of!(b"fake dummy [redacted:");
    holds_exactly(
        |hay| MARKS.found_in(hay),
        &[
            b"someFAKEkey",
            b"xx[REDACTED:1]",
            b"dummy",
            b"k9PzQ2vLx7mN4tR8wY3bH6jD1sF5gA0eC_dummy",
        ],
        &[b"fak", b"dum-my", b"k9PzQ2vLx7mN4tR8wY3bH6jD1sF5gA0eC_dumm", b""],
    );
    // The words at a position come in the list's order.
    const NESTED: Words = words_of!(b"pass b password pa");
    assert_eq!(NESTED.lengths_at(b"xPassword", 1).collect::<Vec<_>>(), [4, 8, 2]);
    assert_eq!(NESTED.lengths_at(b"xPassword", 9).count(), 0);
    const NONE: Words = words_from!(&[]);
    assert_eq!(NONE.iter().count(), 0);
    assert!(!NONE.contains_ci(b"") && !NONE.found_in(b"any"));
    // The vendor table: every rule's name, prefix and stopwords are whole slices of its text.
    for v in &super::VENDORS {
        assert!(
            !v.name().is_empty()
                && v.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        );
        assert!(v.prefix().len() >= 2, "{}", v.name());
    }
    let examples: Vec<&[u8]> = crate::rules::DOCUMENTED_EXAMPLES.iter().collect();
    assert!(!examples.is_empty());
    assert!(
        examples
            .iter()
            .all(|e| e.len() >= 16 && !e.iter().any(u8::is_ascii_whitespace))
    );
}

/// Counts typed kind by kind (blocks of four letters or more counting on, the digits between
/// them counting too) are filler in any slot, and so is a long count of letters typed into a
/// longer value; a block of three or a random stretch between the letters makes it a value again.
#[test]
fn counts_typed_in_blocks_of_each_kind_are_filler() {
    assert_clean(&[
        "export SEARCH_API_KEY=pqrs5678tuvw9012wxyz3456",
        "webhook_secret: \"lmno0987pqrs6543tuvw2109\"",
        "Authorization: Bearer QrStUvWxYzAbCdEf-9876-QrStUvWx",
        "session_token = 'Zk3Pq8Rw1MnOpQrStUvWxYzA9Lk2Jh7'",
    ]);
    assert_found(&[
        // Blocks of three in turn with digits: the held-out sets call these keys.
        "export SEARCH_API_KEY=pqr567stu890vwx123yza456",
        // A random stretch between the letters breaks the count.
        "webhook_secret: \"lmno0987Xq7Zpqrs6543tuvw2109\"",
        // A count of eleven letters is not yet typed filler.
        "session_token = 'Zk3Pq8Rw1MnOpQrStUvW9Lk2Jh7Bv4'",
    ]);
}

/// Documentation's stand-in words after a prefix are filler under a rule as lenient as the `sk-`
/// one (`sk-svcacct-PASTE_YOUR_SERVICE_KEY`, `sk-proj-SAMPLEKEYFORDOCS1`); a random body is a key.
#[test]
fn stand_in_words_after_a_lenient_prefix_are_filler() {
    assert_clean(&[
        "docker run -e LLM_KEY=sk-svcacct-PASTE_YOUR_SERVICE_KEY agent:latest",
        "the sample in the wiki is sk-proj-SAMPLEKEYFORDOCS1 so copy yours over it",
    ]);
    assert_found(&[
        "docker run -e LLM_KEY=sk-svcacct-q7Rz2LmX9vB4nK8wT1cY6pD3 agent:latest",
        "the sample in the wiki is sk-proj-7hQmZ2rXvL9pK4wN8tB1cYd6 so copy yours over it",
    ]);
}

/// A short lowercase word, or two joined by a dash, where a token or an API key goes is a name
/// typed in its place; where a password or a secret goes the word is one, and a generated value
/// in a token's place is a token.
#[test]
fn a_word_where_a_token_goes_is_a_name() {
    assert_clean(&[
        "export SENTRY_AUTH_TOKEN=pending",
        "MAPS_API_KEY=local-dev\nMAPS_REGION=eu",
        "ci:\n  env:\n    UPLOAD_TOKEN=staging_key_not_set_yet",
        "export MAPS_API_KEY=staging-12345",
    ]);
    assert_found(&[
        "export SENTRY_PASSWORD=pending",
        "export APP_SECRET=lantern",
        "export SENTRY_AUTH_TOKEN=q9Xr2LmV7kTz4Wb8",
        "ci:\n  env:\n    UPLOAD_TOKEN=staging_Kq7zXr2m_yet9",
        "export MAPS_API_KEY=staging-19375",
        "MAPS_API_KEY=hT4kq9Zx2mVr7LpB\nMAPS_REGION=eu",
    ]);
}

/// A JWT signed by one lowercase word (`….signature`) is a sketch of one; a signature of both
/// cases and digits signs a token.
#[test]
fn a_jwt_signed_by_a_word_is_a_sketch() {
    assert_clean(&[
        "curl -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvcHMtYm90In0.sigvalue' https://api.acme.test",
    ]);
    assert_found(&[
        "curl -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvcHMtYm90In0.Qm7vX2kLr9TzP4wB8nYc1HdF6sJa3eUg' https://api.acme.test",
    ]);
}

/// After a vendor's prefix, base64 of a documentation marker (a Grafana key's JSON naming
/// `example`) and a body spelling `invalid` are filler; base64 of random bytes is a key.
#[test]
fn encoded_markers_and_invalid_after_a_prefix_are_filler() {
    assert_clean(&[
        "the dashboard loads with glsa_InvalidINVALIDinvalidInvali_1a2b3c4d in the log",
        "grafana:\n  api_key: eyJrIjoiU0FNUExFRVhBTVBMRUtFWSIsIm4iOiJleGFtcGxlIiwiaWQiOjF9",
        // Read after the prefix's whole bytes: `…","n":"example",…` is JSON members still.
        "the panel calls eyJrIjoiUTdaWEFNUExFb3BzS0VZdGVzdFRFU1R0ZXN0MDAiLCJuIjoiZXhhbXBsZSIsImlkIjoyfQ on load",
    ]);
    assert_found(&[
        "the dashboard loads with glsa_Rq7ZkX2mLv9TpW4bN8cY1dF6hJ3sA5eU_0f3c9a1b in the log",
        "the panel calls eyJrIjoibXFvRnFyclJRcmxnNVVUWEk1SjQ1Ym0yVlZlaGlKWlciLCJuIjoib3BzLWRhc2hib2FyZCIsImlkIjo3fQ on load",
        "grafana:\n  api_key: eyJrIjoiWDdxUjJ6TDl2SzRwTThuQjFjVDZ5RDN3RzVoIiwibiI6Im9wcyIsImlkIjo3fQ",
    ]);
}

/// A stand-in phrase closing on `here` stays one with a number glued to it
/// (`your_deploy_token_here2`); a word of its own before `here` and a number is a password.
#[test]
fn a_number_glued_to_a_closing_here_leaves_the_stand_in() {
    assert_clean(&["deploy:\n  auth_token: \"your_deploy_token_here2\""]);
    assert_found(&["deploy:\n  db_password: \"walrus_here2\""]);
}

/// A test asserting or stubbing the literal a secret's getter or member holds names the secret
/// (`assertThat(…getClientSecret(), equalTo("…"))`, `expect(cfg.apiKey).toBe("…")`,
/// `when(…getToken()).thenReturn("…")`); a guard's word, a variable, another getter, or a second
/// argument outside an assertion is none.
#[test]
fn a_literal_a_test_expects_of_a_secret_getter_is_the_secret() {
    assert_found(&[
        "@Test void loads() {\n  assertThat(settings.getWebhookSecret(), is(\"e41c9a07d2b85f36c1a0\"));\n}",
        "it('reads env', () => {\n  expect(env.stripeApiKey).toStrictEqual('Vq3mT8zK1xR6pL9w');\n});",
        "given(store.getRefreshToken()).willReturn(\"Zp4Lx9Qm2Rv7Tk1B\");",
        "Assert.AreEqual(config.getDbPassword(), \"Ru7!kq2Lm\");\n// assert the loader",
    ]);
    assert_clean(&[
        "@Test void loads() {\n  assertThat(settings.getWebhookName(), is(\"e41c9a07d2b85f36c1a0\"));\n}",
        "it('reads env', () => {\n  expect(env.stripeApiKey).toStrictEqual(undefined);\n  expect(env.stripeApiKey).toBe('null');\n});",
        "given(store.getRefreshToken()).willReturn(cachedToken);",
        "sig.update(signingSecret.getBytes(), \"HmacSHA512\");",
    ]);
}

/// A PowerShell double-quoted string holding escaped line breaks (`` `n ``) or escaped quotes in
/// pairs, and a tab-separated row's cell holding `\n` (a database client's batch output), are
/// read as their lines; the same shapes around a stand-in, a Markdown code span inside a string
/// and code indented by a tab with its own `\n` stay clean.
#[test]
fn powershell_strings_and_tab_separated_cells_read_as_lines() {
    for (text, secret) in [
        (
            "$cfg = \"[db]`nhost = db1`npassword = Rk7Tq2Lm9Xv4Wz`n\"",
            "Rk7Tq2Lm9Xv4Wz",
        ),
        (
            "$body = \"{`\"client_secret`\": `\"Tq8Lm2Xv7Rk4Wz9N`\"}\"",
            "Tq8Lm2Xv7Rk4Wz9N",
        ),
        (
            "$note = \"users:`n| name | password |`n|---|---|`n| ops | Wz4!qLm9Tx2Rv |`n\"",
            "Wz4!qLm9Tx2Rv",
        ),
        (
            "3\tdeploy notes:\\n[db]\\nuser = ops\\npassword = Vq9Lm2!x7Rk4\\n\tdone",
            "Vq9Lm2!x7Rk4",
        ),
        (
            "7\tmy .pgpass:\\ndb.internal:5432:prod:app:Hq3!vT8wLp2Zk\tok",
            "Hq3!vT8wLp2Zk",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text:?}");
    }
    assert_clean(&[
        "$cfg = \"[db]`nhost = db1`npassword = changeme`n\"",
        "$body = \"{`\"client_secret`\": `\"<your-secret>`\"}\"",
        "$note = \"users:`n| name | password |`n|---|---|`n| ops | (ask the team) |`n\"",
        "Write-Host \"see `npm ci` first, then `nginx -s reload`\"",
        "3\tdeploy notes:\\n[db]\\nuser = ops\\npassword = <your-password>\\n\tdone",
        "7\tmy .pgpass:\\ndb.internal:5432:prod:app:*\tok",
        "\tfmt.Printf(\"token=%s\\n\", tok)\t// trace",
    ]);
}

/// The prefixes tools print before each line of a file are layout: `cat -n`'s and `grep -n`'s
/// numbers, `grep -rn`'s file, `git blame`'s commit and author, a syslog's time, host and tag, a
/// shell's trace `+ `, IPython's and Python's prompts, a Makefile recipe's `@` and `cat -A`'s
/// `$` ends; a table or a section read through them holds its credential, and its stand-in
/// none.
#[test]
fn line_prefixes_of_tools_are_layout() {
    let table = [
        "Integrations:",
        "| service | key | owner |",
        "|---|---|---|",
        "| acme | Zq8Lm3Vx7Tk2Rw9NpY4c | ops |",
    ];
    let section = ["[SupportSite]", "Username=opsadmin", "Password=thisismypassword"];
    let prefixes: [fn(usize, &str) -> String; 10] = [
        |k, l| format!("{:6}\t{l}", k + 1),
        |k, l| format!("{}:{l}", k + 40),
        |k, l| format!("config/notes.md:{}:{l}", k + 3),
        |k, l| format!("^4e1f0c2 (Ana Lima 2026-10-02 14:03:11 +0200 {}) {l}", k + 1),
        |k, l| format!("Nov 30 23:59:{k:02} build-7 runner[88]: {l}"),
        |_, l| format!("+ {l}"),
        |k, l| format!("{}{l}", if k == 0 { "In [3]: " } else { "   ...: " }),
        |k, l| format!("{}{l}", if k == 0 { ">>> " } else { "... " }),
        |_, l| format!("\t@{l}"),
        |_, l| format!("{}$", l.replace('\t', "^I")),
    ];
    for prefix in prefixes {
        let wrap = |lines: &[&str]| -> String {
            lines
                .iter()
                .enumerate()
                .map(|(k, l)| prefix(k, l))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let text = wrap(&table);
        assert_eq!(spans(&text), ["Zq8Lm3Vx7Tk2Rw9NpY4c"], "{text:?}");
        let text = wrap(&section);
        assert_eq!(spans(&text), ["thisismypassword"], "{text:?}");
        let mut clean = table;
        clean[3] = "| acme | see the vault | ops |";
        let mut empty = section;
        empty[2] = "Password=";
        assert_clean(&[&wrap(&clean), &wrap(&empty)]);
    }
    // A chat's time is no line number, nor a host before a port a file's location.
    assert_eq!(
        spans("10:42 dana: password=Tq8Lm2Xv7Rk4\n10:43 dana: ok"),
        ["Tq8Lm2Xv7Rk4"]
    );
    // A syslog tag that names a secret is the message.
    assert_eq!(
        spans("Nov 30 23:59:01 build-7 password: Wq4!rTz9LmK\nNov 30 23:59:02 build-7 sshd[12]: ok"),
        ["Wq4!rTz9LmK"]
    );
    assert_eq!(
        spans("db.internal:5432:prod:app:Hq3!vT8wLp2Zk"),
        ["Hq3!vT8wLp2Zk"]
    );
}

/// The openings of the new readings repeated (PowerShell's escapes, tab-separated cells, line
/// numbers, blame and syslog prefixes, a shell's quote in a quoted string, literals on lines of
/// their own, `cat -A` ends) read in linear time.
#[test]
fn tool_prefixes_and_line_escapes_scan_in_linear_time() {
    const OPENINGS: [&str; 16] = [
        "`n",
        "\"`n",
        "\"`\"",
        "\"`$`$`$`$`$`$`$`$",
        "a\t\\n",
        "a\t\\n\\n\\n\\n\\n\\n\\n",
        "1:\n",
        "x/a.py:1:",
        "^4e1f0c2 (",
        "Nov 30 23:59:00 h t: \n",
        "'\\''",
        "\"a\\n\"\n",
        "a\\n\\\n",
        "$\n",
        "^I$\n",
        "In [",
    ];
    assert_findings_linear(|size| OPENINGS.iter().map(|o| o.repeat(size / o.len())).collect());
}

/// String literals on lines of their own (C's and Python's implicit joins, Java's `+`) holding
/// escaped line breaks follow one another as one document's lines, and a shell's quote inside a
/// single-quoted string (`'it'\''s'`, and Helm's `\,`) keeps the string open: a table or a
/// section written so holds its credential, and its stand-in none.
#[test]
fn joined_literals_and_shell_quotes_keep_a_document() {
    for (text, secret) in [
        (
            "const char *help =\n    \"| service | key | owner |\\n\"\n    \"|---|---|---|\\n\"\n    \"| acme | Zq8Lm3Vx7Tk2Rw9NpY4c | ops |\\n\";",
            "Zq8Lm3Vx7Tk2Rw9NpY4c",
        ),
        (
            "String note = \"[db]\\n\" +\n    \"user = ops\\n\" +\n    \"password = Vq9Lm2!x7Rk4\\n\";",
            "Vq9Lm2!x7Rk4",
        ),
        (
            "bash -c 'echo \"it'\\''s set:\\n[db]\\npassword = Hq3!vT8wLp2Zk\\n\"'",
            "Hq3!vT8wLp2Zk",
        ),
        (
            "helm upgrade app ./chart --set-string 'notes=it'\\''s here\\, see:\\n| name | password |\\n|---|---|\\n| ops | Wz4!qLm9Tx2Rv |'",
            "Wz4!qLm9Tx2Rv",
        ),
    ] {
        assert_eq!(spans(text), [secret], "{text:?}");
    }
    assert_clean(&[
        "const char *help =\n    \"| service | key | owner |\\n\"\n    \"|---|---|---|\\n\"\n    \"| acme | see the vault | ops |\\n\";",
        "String note = \"[db]\\n\" +\n    \"user = ops\\n\" +\n    \"password = <your-password>\\n\";",
        "bash -c 'echo \"it'\\''s set:\\n[db]\\npassword = <your-password>\\n\"'",
        "helm upgrade app ./chart --set-string 'notes=it'\\''s here\\, see:\\n| name | password |\\n|---|---|\\n| ops | (ask the team) |'",
    ]);
}

/// A dollar escaped inside a double-quoted string (a shell's, Kotlin's, PHP's `\$`) is a dollar:
/// a crypt hash passed so is one, and a variable or a price written so stays text.
#[test]
fn escaped_dollars_in_strings_are_dollars() {
    assert_eq!(
        spans(
            "docker run --rm -e \"ROOT_HASH=\\$6\\$/hBKqFYY/kv5ZJr3\\$PtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA/2O76UMFxFkM/R5Kjp1vRt.1fjORS/6ilI8ihN5KXSc7Tvo\" app:latest"
        )
        .len(),
        1
    );
    assert_clean(&[
        "docker run --rm -e \"CONFIG_DIR=\\$HOME/.config/app\" -e \"PRICE=\\$5 per seat\" app:latest",
    ]);
}

/// A Java properties file's value continued over lines, each ending with an escaped line break
/// and a `\`, is read as its lines: a key's body or a section inside it holds its credential,
/// and a stand-in there none.
#[test]
fn continued_property_values_read_as_lines() {
    assert_eq!(
        spans(
            "server.port=8080\napp.notes=[db]\\n\\\n    user = ops\\n\\\n    password = Vq9Lm2!x7Rk4\\n\\\n    port = 5432\nlogging.level.root=INFO"
        ),
        ["Vq9Lm2!x7Rk4"]
    );
    assert_clean(&[
        "server.port=8080\napp.notes=[db]\\n\\\n    user = ops\\n\\\n    password = <your-password>\\n\\\n    port = 5432\nlogging.level.root=INFO",
    ]);
}

/// A string opened on a key's line and going on below holds its head only when that head is a
/// long run: one short word heading the text (`'''Options:`) is a docstring's.
#[test]
fn a_broken_string_holds_a_long_head_not_a_heading() {
    assert_found(&["API_SECRET = '''jAS8zdGZW9iME68R3Tux\nPklDd5XdOrdM'''"]);
    assert_clean(&["HELP_TOKEN = '''Options:\n  the token is read from a file\n'''"]);
}

/// `root`, `admin` and weak literals are a password on a YAML line whose key ends on the
/// password's word; a word after it names a property of the password.
#[test]
fn default_account_words_are_a_password_only_under_its_own_key() {
    assert_found(&["smtp:\n  smtp_password: toor\n  port: 25"]);
    assert_clean(&["accounts:\n  password_rotation_by: root\n  interval: 90d"]);
}

/// One group typed three times is filler in a token-long value; a short one is a person's
/// password as often.
#[test]
fn a_short_repeated_group_stays_a_password() {
    assert_found(&["WIFI_PASSWORD=Qz4-Qz4-Qz4 on the guest network"]);
    assert_clean(&["SLACK_TOKEN=xoxb-1618033988-1618033988-1618033988-16180339 in the sample"]);
}

/// A Mailgun key's two short groups are random; a count in the last one ends a typed id.
#[test]
fn a_mailgun_shape_ending_in_a_count_is_an_id() {
    assert_found(&["MG_KEY=479a1b3ba33e8f6d23bb8d954f5ff261-b890d33b-5965ec57 and sends bounce"]);
    assert_clean(&["span 606e7facbabd846dc2ddf9e10b165700-c8b14d3d-00000002 was exported twice"]);
}

/// Base64 of JSON members naming a marker is filler only when no member is generated: a key
/// its owner named `demo-sample-reader` still carries its random member.
#[test]
fn encoded_json_with_a_generated_member_is_a_key_whatever_its_name() {
    assert_found(&[
        "LOKI_TOKEN=glc_eyJvIjoiMjIwODgxMSIsIm4iOiJkZW1vLXNhbXBsZS1yZWFkZXIiLCJrIjoieFdaeDdRQ0Y1dWxyQjBaQlVmdTJPVEVIIiwibSI6eyJyIjoicHJvZC1hcC1zb3V0aC0xIn19",
    ]);
    assert_clean(&[
        "LOKI_TOKEN=glc_eyJvIjoiMjIwODgxMSIsIm4iOiJzYW1wbGUtcmVhZGVyIiwiayI6ImV4YW1wbGUta2V5LXZhbHVlLWhlcmUiLCJtIjp7InIiOiJwcm9kLWFwLXNvdXRoLTEifX0=",
    ]);
}

/// A capitals name glued to `KEY` names a key, but not a public one (`…PUBKEY`, `…PUBLICKEY`).
#[test]
fn a_capitals_name_glued_to_key_is_no_public_key() {
    assert_found(&["export DEEPLKEY=dRptDhT5snC8ABESs57uFtWhNpxeo1OC8XusPNmy"]);
    assert_clean(&[
        "export AGEPUBKEY=dRptDhT5snC8ABESs57uFtWhNpxeo1OC8XusPNmy",
        "export GPGPUBLICKEY=dRptDhT5snC8ABESs57uFtWhNpxeo1OC8XusPNmy",
    ]);
}

/// A generated value glued to a weak plural's colon is one; named words around a symbol are a
/// label's.
#[test]
fn named_words_glued_to_a_plural_colon_are_a_label() {
    assert_found(&["the dump holds tokens:Wp4#zQ9rKcL and nothing else"]);
    assert_clean(&["the selector holds roles:PowerUser#Team2 and keys:PowerUser#Team2 or keys:PowerUser#R2"]);
}

/// Hex after the bare word `key_` is a vendor's key, but a cache's or a store's entry on a line
/// about one.
#[test]
fn hex_after_key_on_a_cache_line_is_its_lookup_key() {
    assert_found(&[
        "the cursor cli rejects key_606e7facbabd846dc2ddf9e10b165700c8b14d3d5ea2e70ad3afa129059f8458 today",
    ]);
    assert_clean(&[
        "cache miss on key_606e7facbabd846dc2ddf9e10b165700c8b14d3d5ea2e70ad3afa129059f8458, rebuilding",
    ]);
}

/// An assertion's expected literal written before the key's getter (`assertEquals("…",
/// client.getApiKey())`, JUnit's order) is the secret, as after it; a literal before a getter in
/// any other call is an argument, and a stand-in stays one.
#[test]
fn an_expected_literal_before_a_secret_getter_is_the_secret() {
    assert_found(&["assertEquals(\"Tq8#Lp2vXw91mKcgZA8z\", client.getApiKey());"]);
    assert_clean(&[
        "assertEquals(\"REDACTED\", client.getApiKey());",
        "register(\"Tq8#Lp2vXw91mKcgZA8z\", client.getApiKey());",
    ]);
}

/// After a prefix that is also a word's or a place's (`pa-`), a body of lowercase words joined
/// by dashes is a page's slug; a generated body of the same length is the vendor's key.
#[test]
fn lowercase_words_after_a_vendor_prefix_are_a_slug() {
    assert_found(&["embeddings fail with pa-7iiTIDi2NT6oEVcMaZpu1R7fQ5hn58pVKgd3dUgoc2C since monday"]);
    assert_clean(&[
        "the plan is at https://roads.example.org/docs/pa-2025-county-roads-and-bridges-capital-plan1/ now",
    ]);
}

/// `text`'s lines cut at `width` characters, as `fold -w` does, or after the last blank before
/// the width when there is one, as `fold -s` and a mail client do.
fn folded(text: &str, width: usize, at_blanks: bool) -> String {
    let mut out = Vec::new();
    for line in text.split('\n') {
        let mut rest: Vec<char> = line.chars().collect();
        while rest.len() > width {
            let cut = if at_blanks {
                rest[..width]
                    .iter()
                    .rposition(|&c| c == ' ')
                    .map_or(width, |b| b + 1)
            } else {
                width
            };
            out.push(rest[..cut].iter().collect::<String>());
            rest.drain(..cut);
        }
        out.push(rest.iter().collect());
    }
    out.join("\n")
}

/// A prompt hard-wrapped at a fixed width (a terminal's copy, `fold`, a mail client) is read with
/// its cut lines rejoined: a token or a password cut in two is found whole, at any width the
/// prompt's own lines show; the same prompts with an ordinary value stay clean.
#[test]
fn hard_wrapped_prompts_are_read_rejoined() {
    let note = "Our release job started failing this morning after the runner image was updated, \
                and I cannot tell whether it is the cache or the credentials.";
    let secret_cases = [
        (
            format!(
                "{note}\nthe deploy step reads GITHUB_TOKEN=ghp_Rk3vX9qLm2Tz8Wn5Pb7Yc4Hd6Jf1Gs0Ae2Ku from the runner env, see below"
            ),
            "Rk3vX9qLm2Tz8Wn5Pb7Yc4Hd6Jf1Gs0Ae2Ku",
        ),
        (
            format!(
                "{note}\nafter the reset the new password is Xq7vR2pL9zKw and it expires on friday, can you update the vault"
            ),
            "Xq7vR2pL9zKw",
        ),
    ];
    for (text, secret) in &secret_cases {
        for width in [43, 58, 64, 71, 90] {
            for at_blanks in [false, true] {
                let wrapped = folded(text, width, at_blanks);
                let found = findings(&wrapped);
                let head = &secret[..4];
                assert!(
                    found.iter().any(|f| wrapped[f.start..f.end].contains(head)),
                    "{width} {at_blanks}: {wrapped}"
                );
            }
        }
    }
    for text in [
        format!(
            "{note}\nthe deploy step reads GITHUB_TOKEN=${{{{ secrets.GITHUB_TOKEN }}}} from the runner env, see below"
        ),
        format!(
            "{note}\nafter the reset the new password is in the team vault and it expires on friday, can you check it"
        ),
        format!(
            "{note}\nthe failing step is scripts/release/publish-artifacts-to-the-internal-registry.sh on the arm runners only"
        ),
    ] {
        for width in [43, 58, 64, 71, 90] {
            for at_blanks in [false, true] {
                let wrapped = folded(&text, width, at_blanks);
                assert!(findings(&wrapped).is_empty(), "{width} {at_blanks}: {wrapped}");
            }
        }
    }
}

/// One line cut once (the prompt's only long line) is read rejoined for a token cut in two; a
/// line whose last word runs into a word of its own on the next line (`FAIL`) is not a cut.
#[test]
fn a_token_cut_by_the_only_wrap_of_a_prompt_is_found() {
    assert_found_across_one_cut(
        "the mirror job failed to fetch with glpat-Vq8Lr2Xn5Tz9Kw3Pm7Yb from the internal registry\nany idea?",
        48,
        "glpat-Vq8Lr2\nXn5Tz9Kw3Pm7Yb",
    );
    assert_clean(&[
        "    unexpected input in the fixture: glpat-abcdefghijklmnopqrst\nFAIL\nany idea?",
        "the mirror job failed to fetch src/components/forms/ButtonGr\noup.tsx from the cache\nany idea?",
    ]);
}

/// A prompt's only wrap deep inside a long prompt (lines before and after it) is read as it is
/// alone: the lines around the cut are read rejoined, a token cut in two is found, a path cut
/// in two is not.
#[test]
fn the_only_wrap_of_a_long_prompt_is_read_around_its_cut() {
    let before: String = (0..700).map(|i| format!("step {i} ok\n")).collect();
    let after: String = (0..700).map(|i| format!("check {i} done\n")).collect();
    let token = "glpat-Vq8Lr2\nXn5Tz9Kw3Pm7Yb";
    assert_spans(&[(
        &format!("{before}the mirror job failed to fetch with {token} from the internal registry\n{after}"),
        token,
    )]);
    assert_clean(&[&format!(
        "{before}the mirror job failed to fetch src/components/forms/ButtonGr\noup.tsx from the cache\n{after}"
    )]);
}

/// A long prompt's only wrap near its start or its end, its lines ending in CRLF: the lines
/// around the cut, read rejoined, reach the prompt's edge; a token cut there is found, a file
/// name cut there is not.
#[test]
fn the_only_wrap_near_a_long_prompts_edge_is_read_around_its_cut() {
    let lines: String = (0..900).map(|i| format!("row {i} unchanged\r\n")).collect();
    let token = "sk_live_4eQm9TvR2\r\nxLp7WnB3kZ8cYd";
    let cut = format!("the billing job still signs with {token} after the rotation\r\n");
    let path = "the billing job still reads assets/templates/invoices/Monthl\r\nyInvoiceLayout.html\r\n";
    for (text, found) in [
        (format!("{cut}{lines}"), true),
        (format!("{lines}{cut}"), true),
        (format!("{path}{lines}"), false),
        (format!("{lines}{path}"), false),
    ] {
        if found {
            assert_spans(&[(&text, token)]);
        } else {
            assert_clean(&[&text]);
        }
    }
}

/// `text` folded at `width` is cut once, and its only finding is `span`, across the cut.
fn assert_found_across_one_cut(text: &str, width: usize, span: &str) {
    let wrapped = folded(text, width, false);
    assert_eq!(
        wrapped.matches('\n').count(),
        text.matches('\n').count() + 1,
        "{wrapped}"
    );
    assert_eq!(spans(&wrapped), [span]);
}

#[test]
fn wrapped_and_repeated_lines_scan_in_linear_time() {
    assert_findings_linear(|size| {
        vec![
            // Distinct lines of one width: a wrapped text, read twice.
            (0..size / 41).map(|i| format!("{i:040}\n")).collect::<String>(),
            // The same line again and again, and lines ending after a blank.
            "password = Xq7vR2pL9zKwXq7vR2pL9zKwXq7vR2pL9zKw\n".repeat(size / 46),
            "token: a b c d e f g h i j k l m n o p q r s \n".repeat(size / 46),
        ]
    });
}

/// A key's value cut by a prompt's only wrap is found when the next line starts as a random
/// token's tail; a value that ends its line before a word, a name or a log's next line is not
/// read glued to it.
#[test]
fn a_value_cut_by_the_only_wrap_is_found_when_its_tail_looks_random() {
    assert_found_across_one_cut(
        "    conn = connect(host=\"db.internal\", user=\"svc\", password=\"Lq4zRw8TnX2kVb7pYs3m\")\nwhy is it refused?",
        72,
        "Lq4zRw8TnX2\nkVb7pYs3m",
    );
    assert_clean(&[
        "    parse(\"settings.ini\", section=\"deploy\", key=\"token\", value=cfg.api_token_name_for_deploy}\nValueError: unknown section\nany idea?",
        "2026-01-05T10:00:00Z WARN loader could not parse the entry for the cache: secret_token=abc123\nthe worker keeps logging this on every boot",
    ]);
}

/// A JWT whose signature is the alphabet typed in order with digits between (`…aB1cD2eF3…`) is a
/// sketch; a random signature after the same header and payload is a token.
#[test]
fn a_jwt_signed_by_the_alphabet_typed_in_order_is_a_sketch() {
    assert_clean(&[
        "x = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ.aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2yZ3\"",
        "bearer: eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhY21lIn0.Mn4Op5Qr6St7Uv8Wx9Yz0Ab1Cd2Ef3Gh4Ij5",
    ]);
    assert_found(&[
        "x = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ.Kq9ZrT2mVb7XwLp4NcYd1HsFj8GtRe3UaQo6WiEk\"",
        "bearer: eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhY21lIn0.Xw4Tq9Lm2Rb7Vk3Hz8Pd5Jc1Ny6Gf0Su4Ea9",
    ]);
}

/// Capitals of stand-in words glued (`TESTDEMOKEY`, `SAMPLETOKEN`) before a long padding run are a
/// demo value's head, not a generated one; a random head before the padding keeps the key.
#[test]
fn stand_in_capitals_before_padding_are_filler() {
    assert_clean(&[
        "PUSH_SERVER_KEY=\"ZZZZAbc1Key:APA91bTESTDEMOKEY00000000000000000000000000000000000000000000000000\"",
        "fcm: \"APA91bSAMPLETOKEN0000000000000000000000000000000000000000000000000000000\"",
    ]);
    assert_found(&[
        "PUSH_SERVER_KEY=\"ZZZZAbc1Key:APA91bHq3ZxT9vLmW2kPe7YcRn40000000000000000000000000000000000000000000\"",
        "fcm_key: \"AAAAx7Kp2Qz:APA91bHq3ZxT9vLmW2kPe7YcRn4BsJd8FgA1uEo5NtVw6XiCy0MrLbKhGjDfSaZqPxTe\"",
    ]);
}

/// A short word then counts in a vendor token's body (`foo1234567890abc`) is typed in its place;
/// the same word before a random stretch is a token.
#[test]
fn a_word_then_counts_after_a_prefix_is_filler() {
    assert_clean(&[
        "curl -H \"X-Api: endr+bar9876543210zyx\" https://api.example.test",
        "ACME_TOKEN=endr+qux0123456789abcd",
    ]);
    assert_found(&[
        "curl -H \"X-Api: endr+bar0123Kx7Q2mPz9\" https://api.example.test",
        "ACME_TOKEN=endr+qux7Rm2Kp9ZtW4vBq",
    ]);
}

/// A 42 app's client uid (`u-s4t2ud-…`) names the app; its `s-s4t2ud-` secret is the secret.
#[test]
fn an_oauth_client_uid_is_no_secret() {
    assert_clean(&["INTRA_UID=u-s4t2ud-5b0e1c7a9d3f4e2a8c6b1d0f7e3a9c5b2d8f4a6e1c3b7d9f0a2e4c6b8d1f3a5e"]);
    assert_found(&["INTRA_SECRET=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"]);
}

/// An unquoted password holding `[@…]` is a password's symbols, not an index (`values[index]`,
/// `args[0]`, C#'s `dict[@"key"]`).
#[test]
fn brackets_around_an_at_word_are_a_passwords_symbols() {
    assert_clean(&[
        "String password = values[index]",
        "String password = args[0]",
        "var pw = dict[@\"key\"]",
    ]);
    assert_found(&[
        "String password = hunt3r[@x9Lq]",
        "  private static final String DB_PASS = s3cr$t[@Qw7@]",
        "pwd = blue[@m00n]",
    ]);
}

/// Digits counting on past `9` to `0` (`567890`, `901234`) are a typed count inside a long
/// value, as `123456` is; the same value with no such run is a secret.
#[test]
fn digits_counting_past_nine_are_typed() {
    assert_clean(&[
        "search_key: \"f3a9c2e7b1d4567890e2c8a4f6b0d3e9\"",
        "CACHE_SECRET=9e4b2d7c1a3f8901234e6c0b5a9d7f2e8c1b",
    ]);
    assert_found(&[
        "search_key: \"f3a9c2e7b1d4e2c8a4f6b0d3e9a7c51d\"",
        "CACHE_SECRET=9e4b2d7c1a3f8e6c0b5a9d7f2e8c1b3a47d0",
    ]);
}

/// A check's answers remembered for the last texts asked about: the same text is answered from
/// memory, another of the same length is checked afresh, and a long one always is.
#[test]
fn a_remembered_check_answers_as_the_check_does() {
    use crate::bytes::Recent;
    use std::cell::{Cell, RefCell};
    thread_local! {
        static MEMO: RefCell<Recent> = const { RefCell::new(Recent::new()) };
    }
    let calls = Cell::new(0);
    let check = |v: &[u8]| {
        calls.set(calls.get() + 1);
        v.contains(&b'z')
    };
    assert!(Recent::answer(&MEMO, b"q7zk", check));
    assert!(!Recent::answer(&MEMO, b"q7yk", check));
    assert!(Recent::answer(&MEMO, b"q7zk", check));
    assert!(!Recent::answer(&MEMO, b"q7yk", check));
    assert_eq!(calls.get(), 2);
    // Four others push a text out of memory: it is checked again, with the same answer.
    for v in [&b"a1"[..], b"b2", b"c3", b"d4"] {
        assert!(!Recent::answer(&MEMO, v, check));
    }
    assert!(Recent::answer(&MEMO, b"q7zk", check));
    assert_eq!(calls.get(), 7);
    let long = [b'z'; Recent::MAX + 1];
    assert!(Recent::answer(&MEMO, &long, check) && Recent::answer(&MEMO, &long, check));
    assert_eq!(calls.get(), 9);
}

/// Keys packed so densely that each one's value runs over the next ones (`key=key=…` on one line)
/// would have the same bytes judged hundreds of times over: past a bound the rest is taken for a
/// secret unjudged, so such a prompt costs about what plain text of its size does and is withheld;
/// a short one, and real text of any size, is judged as ever.
#[test]
fn values_judged_over_and_over_are_withheld_at_the_cost_of_plain_text() {
    let timed = |text: &str| {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                let _ = findings(std::hint::black_box(text));
                started.elapsed()
            })
            .min()
            .expect("runs")
    };
    for unit in ["key=", "token=", "pwd:"] {
        let packed = unit.repeat(64_000 / unit.len());
        let plain = "Refactor the retry loop so the queue consumer keeps its place. ".repeat(1_000);
        let (packed_time, plain_time) = (timed(&packed), timed(&plain));
        assert!(
            packed_time < plain_time * 30,
            "{unit:?}: 64 KB took {packed_time:?}, plain text of that size {plain_time:?}"
        );
        assert!(
            find_secret(&packed).is_some(),
            "{unit:?} packed over 64 KB is withheld"
        );
    }
    // Below the bound nothing changes: a short run is judged (and is no secret), and so is a key
    // whose value is a credential after a long run of them.
    assert_clean(&["key=key=key=key=", "set key=key=value in the map"]);
    let mut text = "key=".repeat(100);
    text.push_str(" password=Zq8pLm2xQv7T");
    assert!(find_secret(&text).is_some());
}

/// `cred` ending its word names a credential as `creds` does, so a generated value under it is
/// one; inside another word (`credit`, `CREDO`) or holding a word it names nothing.
#[test]
fn a_generated_value_under_cred_is_a_secret() {
    assert_found(&[
        "smtpCred := \"r8Vq2XmLk4TzN7pW9sYb3Hd6Jf1Ge5Ua\"",
        "export MIRROR_CRED='Zt7pQ2vX9kLm4Rn8Wb3Yc6Hs1Jd5Fg0e'",
    ]);
    assert_clean(&[
        "creditLimit = \"r8Vq2XmLk4TzN7pW9sYb3Hd6Jf1Ge5Ua\"",
        "CREDO_VERSION='Zt7pQ2vX9kLm4Rn8Wb3Yc6Hs1Jd5Fg0e'",
        "cred = load_from_keyring(\"mirror\")",
    ]);
}

/// `Bearer:` with a colon, as a header's own line is typed, still carries its token; a word or
/// a short value after it is prose.
#[test]
fn a_token_after_bearer_and_a_colon_is_a_secret() {
    assert_found(&[
        "curl -H \"X-Upstream: Bearer: q7Zr2Lx9Vk4Tm8Wn3Pb6\" https://api.internal/v2/jobs",
        "const AUTH = \"Bearer: 5mKq2Vr8Xz7Ln4Wp9Tb3Yc\";",
    ]);
    assert_clean(&[
        "the docs list two schemes, Basic: for a user and Bearer: for a token issued by the server",
        "Bearer: required, see the auth section",
    ]);
}

/// A count of four or five digits under a password's key (`passphrase='1234'`) is typed where the
/// value goes, as `123456` is; four random characters are a weak password and stay one.
#[test]
fn a_short_count_under_a_key_is_no_value() {
    assert_clean(&[
        "db = connect(user=\"svc\", passcode=\"4321\")",
        "PASSPHRASE=54321\nmake sign",
    ]);
    assert_found(&["db = connect(user=\"svc\", password=\"4q!z\")"]);
}

/// A value made of the key's own words is the slot's name, a word in the plural too
/// (`queue_pwd = "queues_secret"`); other words there are a weak literal password.
#[test]
fn a_value_restating_its_key_in_the_plural_is_its_name() {
    assert_clean(&["queue_pwd = \"queues_secret\"", "ROUTER_PWD='routers-secret'"]);
    assert_found(&["queue_pwd = \"orange_secret\""]);
}

/// A PEM header inside a regular expression (`/-----BEGIN … KEY-----/`) is a pattern that finds
/// keys; a header alone on its line may be a key cut short.
#[test]
fn a_pem_header_in_a_regular_expression_is_a_pattern() {
    assert_clean(&["if (/-----BEGIN EC PRIVATE KEY-----/.test(body)) { reject(); }"]);
    assert_found(&[
        "cat id_ecdsa\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBq7Zr2Lx9Vk4Tm8Wn3Pb6Yc1Hd5Jf0GeUaQ2vX9kLm4oAoGCCqGSM49\n",
    ]);
}

/// A Go composite literal with its first field after the brace (`sessionKey{user: u}`, an
/// unexported type in camel case, or `Token{Kind: k}`) builds the value in code; a random value
/// holding a brace is still one.
#[test]
fn a_composite_literal_with_its_fields_is_code() {
    assert_clean(&[
        "\tkey := sessionKey{user: u, scope: s}\n\tcache.Put(key, v)",
        "\tsecret := vault.Secret{Data: payload}",
        "\tkey := lookupKey{}",
    ]);
    assert_found(&["\tpassword := Tq8mWz{4rN7:"]);
}

/// Values that hold `key=value` pairs of their own are read again once or so per byte, not
/// hundreds of times: a long text of them, and the ordinary code after it, is judged as ever.
#[test]
fn values_holding_pairs_of_their_own_stay_under_the_bound() {
    // Words of four to six letters, none random (a fixed sequence through the alphabet).
    let mut seed = 7u32;
    let mut word = || {
        let n = 4 + (seed % 3) as usize;
        (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                char::from(b'a' + ((seed >> 16) % 26) as u8)
            })
            .collect::<String>()
    };
    let mut text = String::new();
    for _ in 0..1_200 {
        let line = format!(
            "password: \"user={} token={} secret={} key={} pass={}\"\n",
            word(),
            word(),
            word(),
            word(),
            word()
        );
        text.push_str(&line);
    }
    for _ in 0..2_500 {
        let row = format!(
            "| token | {}{} | secret key: {} | password: {} |\n",
            word(),
            word(),
            word(),
            word()
        );
        text.push_str(&row);
    }
    text.push_str("\ncount = 3\nname = \"world\"\nprint(f\"hello {name}\")\n");
    assert!(
        find_secret(&text).is_none(),
        "withheld: {:?}",
        findings(&text)
            .first()
            .map(|f| &text[f.start..f.end.min(f.start + 80)])
    );
}

/// Base64 of a prefix then one character repeated (an `.npmrc`'s `_auth` of `user:TOKENzzzz…`) is
/// filler encoded; the same slot holding base64 of a generated password is a secret.
#[test]
fn encoded_prefix_then_a_run_is_filler() {
    assert_found(&["//npm.corp.test/:_auth=Y2ktcnVubmVyOlhyN0xwMlF3Wms5VnQ0TWJOOHNKM2hZYw=="]);
    assert_clean(&[
        "//npm.corp.test/:_auth=Y2ktcnVubmVyOk5QTXFxcXFxcXFxcXFxcQ==",
        "registry_password: VE9LRU4tenp6enp6enp6enp6",
    ]);
}

/// An SDK's authenticator given one generated literal holds its key; a template, a stand-in, an
/// environment lookup or a UUID given so is none.
#[test]
fn an_authenticator_given_a_literal_holds_a_key() {
    assert_found(&[
        "auth = BearerTokenAuthenticator(\"Zk3PqL9xVt2mWn8RbY4c\")",
        "authenticator = IAMAuthenticator(\n    'V2hYk-9qLmT_4rPzWc8NbJx3sD6fGa1uEoRtZy7KiQvB'\n)",
    ]);
    assert_clean(&[
        "authenticator = IAMAuthenticator(\"{apikey}\")",
        "authenticator = IAMAuthenticator(os.environ[\"IBM_KEY\"])",
        "authenticator = IAMAuthenticator(\"your-api-key\")",
        "cred = TokenCredential(\"3f2a6c1e-8b9d-4e7a-a1b2-9c8d7e6f5a4b\")",
        "a = NoAuthAuthenticator()",
    ]);
}

/// A CI runner's log opens each line with its time: the longest line, filler to its end, was not
/// cut before the next line's time; a generated token on it is still one.
#[test]
fn a_line_before_a_logs_time_was_not_cut() {
    let log = |line: &str| {
        format!(
            "Build output:\n2026-05-11T08:14:02.5512345Z Run ./deploy.sh\n\
             2026-05-11T08:14:03.5523456Z   {line}\n2026-05-11T08:14:04.5534567Z Done"
        )
    };
    assert_found(&[&log(
        "the key is in the env: sk-proj-Hq7vNz2LxR9pWk4mTb6Y3sJd8cT3BlbkFJuE5gQw1rA7nZk0vXy2LmP9tB",
    )]);
    assert_clean(&[&log(
        "OPENAI_KEY placeholder: sk-proj-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
    )]);
}

/// IPython numbers a traceback's source lines (`      2 `, `----> 3 `): the line's text starts
/// after the number, as a line of its own.
#[test]
fn an_ipython_tracebacks_numbers_are_layout() {
    let cell = |line: &str| {
        format!(
            "Cell In[4], line 3\n      1 import yaml\n      2 cfg = yaml.safe_load('''\n----> 3 {line}\n      4 ''')"
        )
    };
    assert_found(&[&cell("- password: rzhky-pgjbo-vheei")]);
    assert_clean(&[
        &cell("- note: rzhky-pgjbo-vheei"),
        "      12 retries = 3\n      13 timeout = 30",
    ]);
}

/// A word list passes over a position whose first two bytes start none of its words, and finds
/// every word whatever its case and wherever it stands: a word of one byte (which has no second),
/// one at the text's very end, one that starts with a symbol or a byte beyond ASCII.
#[test]
fn a_word_list_skips_what_starts_none_of_its_words() {
    use crate::words::words_from;
    const MIXED: Words = words_from!(&[b"qz", b"#{", b"\xc3\xa9t\xc3\xa9", b"!"]);
    for hay in [
        &b"aaaaQZ"[..],
        b"xx#{y}",
        b"l'\xc3\xa9t\xc3\xa9",
        b"hi!",
        b"!",
        b"aQzb",
    ] {
        assert!(MIXED.found_in(hay), "{hay:?}");
    }
    for hay in [&b"aaaaQ"[..], b"zq#(", b"\xc3\xa9", b"z", b"", b"q z#"] {
        assert!(!MIXED.found_in(hay), "{hay:?}");
    }
    // One byte's word alone: a text's last byte is read as well as any other.
    const ONE: Words = words_from!(&[b"k"]);
    assert!(ONE.found_in(b"abcK") && ONE.found_in(b"Kx") && !ONE.found_in(b"abc"));
}

/// After a secret word's key, an unquoted password with symbols is read to its end however the
/// window around it is searched; a tag or a name repeated without a blank (few distinct bytes,
/// however many symbols) is no value.
#[test]
fn a_dense_window_of_few_bytes_is_no_password() {
    assert_found(&[
        "vault_secret => Zq7!mR2#vK9$wX4@pL6^tB",
        "ftp_password = Rt5,Gh8*Lk2!Mn6#Pq9",
    ]);
    let tags = "<secret>".repeat(60);
    let names = "<apiKey>,".repeat(50);
    assert_clean(&[&tags, &names, "api_token -> a&b=c&d=e&f=g&h=i&j=k&l=m"]);
}

/// A token-length value whose letters and digits count down side by side, or up or down every
/// other character, or that spells the documentation marker, was typed to fill the slot; the
/// same value with those places random is a token. (The counts are read in one pass, the marker
/// looked for only where an `M` stands.)
#[test]
fn a_count_or_a_marker_inside_a_token_is_typed() {
    assert_found(&[
        "SERVICE_TOKEN=Rz8Tq3Wm7Kp2Lx9Vn4Hc6Bd1",
        "SERVICE_TOKEN=Rz8Tq3Wm7Kp2Lx9Vn4Hc6Bd1Ys",
        "SERVICE_TOKEN=Rz8Tq3W5APL3p2Lx9Vn4Hc6Bq",
    ]);
    assert_clean(&[
        "SERVICE_TOKEN=Rz8Tq3Wm7Kp2Lx9Vn4gfedcba",
        "SERVICE_TOKEN=Rz8Tq3Wm7Kp2La1b2c3d4e5f",
        "SERVICE_TOKEN=Rz8Tq3Wm7Kp2Lf9e8d7c6b5a",
        "SERVICE_TOKEN=Rz8Tq3W5AMPL3p2Lx9Vn4Hc6",
    ]);
    // A count of digits making most of a short value, up or down (on past `9` to `0`), was
    // typed; the same characters out of order are a secret (the count is given up on once it
    // can no longer make most of the value).
    assert_clean(&["client_secret=x98765432109y", "client_secret=Ab3456789012Xq"]);
    assert_found(&["client_secret=x98715432609y", "client_secret=Ab3451789042Xq"]);
    // A host's name around an IPv4 address is no secret; a password holding one still is.
    assert_clean(&["node_addr=edge-10.24.3.7-west"]);
    assert_found(&["db_password=Qv7-10.24.3.7-Zk"]);
}

/// Keys packed without a blank read their windows on from one another: a password closing such a
/// run is still read whole, and the run alone, its few bytes repeated, holds none.
#[test]
fn a_password_closing_a_packed_run_of_keys_is_found() {
    let packed = "pwd=;".repeat(100);
    let tags = "<token>".repeat(40);
    for text in [
        format!("{packed}pwd=Xk9#mQ2$vL7!pR4@tW8^"),
        format!("{tags}<token>Hq8%Zt3&Wn6*Lp1#Vr5@Kd"),
        format!("{packed} pwd=Xk9#mQ2$vL7!pR4@tW8^"),
    ] {
        let found = findings(&text);
        assert!(
            found
                .iter()
                .any(|f| text[f.start..f.end].ends_with("tW8^") || text[f.start..f.end].ends_with("5@Kd")),
            "{text}"
        );
    }
    assert_clean(&[&packed, &tags]);
}

/// An unquoted value ends where a connection string's next field, a query's next parameter or
/// a sentence in another script starts, whatever letters and digits run before it (they are
/// passed over without asking); a stand-in's words before a setting's end are none.
#[test]
fn an_unquoted_value_ends_at_the_next_field() {
    assert_spans(&[
        (
            "Server=db7;Uid=ops;Pwd=Lk4vR9qZ2mW7;Connect Timeout=30",
            "Lk4vR9qZ2mW7",
        ),
        ("api_secret=Hq8Zt3Wn6Lp1Vr5Kd7Xc请保管", "Hq8Zt3Wn6Lp1Vr5Kd7Xc"),
        ("token=Hq8Zt3Wn6Lp1Vr5Kd7Xc&page_size=20", "Hq8Zt3Wn6Lp1Vr5Kd7Xc"),
        ("Server=db7;Uid=ops;Pwd=builder;Max Pool Size=30", "builder"),
    ]);
    assert_clean(&["auth_token=refresh_token_value_here,expires=3600"]);
}

/// The shapes that name no secret (a member path, a store's path, a constant's name, words
/// joined by a typographic dash, entity-escaped text, a cookie's attribute, a sentence in
/// Japanese) are told by the bytes they need before they are read; a generated value holding
/// one of those bytes is a value still.
#[test]
fn shapes_naming_no_secret_need_their_own_bytes() {
    assert_clean(&[
        "password=config.db.password",
        "api_key=vault/prod/billing:api_key",
        "api_key=PROD_BILLING_API_KEY",
        "secret=well—known",
        "password=&#1087;&#1072;&#1088;&#1086;&#1083;&#1100;",
        "cookie_secret=Path",
        "secret: 秘密の値をここに入力",
    ]);
    assert_found(&[
        "password=Kx7.mQ9vL2pR",
        "api_key=Hq8Zt3Wn6Lp1:Vr5Kd7Xc9Qm2",
        "api_key=PQ7_ZK4M_9XRT_WV2LHN8",
        "secret=Hq8Zt3—Wn6Lp1Vr5",
        "password=Hq8&amp;Zt3Wn6",
        "cookie_secret=Hq8Zt3Wn6Lp1Vr5",
    ]);
}

/// One group typed over and over between separators is a stand-in; groups that differ, or no
/// separators at all, make a token. Punctuation alone is no value.
#[test]
fn a_group_repeated_needs_three_parts() {
    assert_clean(&["SERVICE_TOKEN=Kx9R-Kx9R-Kx9R-Kx9R-Kx9R", "db_password=¿?¡!—…»«"]);
    assert_found(&[
        "SERVICE_TOKEN=Kx9R-Wm4T-Zq7P-Lb2N-Hv8C",
        "SERVICE_TOKEN=Kx9RWm4TZq7PLb2NHv8CpQ",
    ]);
}

/// Base64 of typed filler (Basic credentials of one letter repeated, words around a marker) is
/// a stand-in; base64 of a real password, or a generated key whose first bytes decode to no
/// text, is a secret. (The decoding stops at the first byte that is no text.)
#[test]
fn encoded_filler_is_text_from_its_first_bytes() {
    assert_clean(&[
        "Authorization: Basic YWRtaW46YWFhYWFh",
        "API_TOKEN=ZXhhbXBsZSBkZW1vIHRva2VuIHNhbXBsZQ",
    ]);
    assert_found(&[
        "Authorization: Basic cm9vdDpIcTh6VDN3TjZsUDF2UjVr",
        "API_TOKEN=q8Zr2mXv7KpL4tWn9HcB3yDf6GjQ1sRe",
    ]);
}

/// A `host:port:db:user:password` line is split into fields up to its end or a newline, and no
/// further than 512 bytes; a blank or a tenth field rules the line out.
#[test]
fn colon_fields_end_at_the_line_and_at_512_bytes() {
    use crate::commands::colon_fields;
    let line = "db.example.internal:5432:orders:app:Vq7Lm2Xz9Rt4Kp8";
    assert_found(&[line, &format!("{line}\nnext line")]);
    assert!(find_secret(&format!("{line} trailing words")).is_none());
    let padded = |n: usize| format!("{}:5432:orders:app:Vq7Lm2Xz9Rt4Kp8", "h".repeat(n));
    let fits = padded(512 - line.len() + "db.example.internal".len());
    assert_eq!(fits.len(), 512);
    assert_eq!(colon_fields(fits.as_bytes(), 0).map(|f| f.1), Some(5));
    assert_eq!(
        colon_fields(format!("{fits}\n").as_bytes(), 0).map(|f| f.1),
        Some(5)
    );
    let long = format!("{fits}x");
    assert_eq!(colon_fields(long.as_bytes(), 0), None);
    assert_eq!(colon_fields(format!("{long}\n").as_bytes(), 0), None);
    assert_eq!(colon_fields(b"a:b:c:d:e:f:g:h:i", 0).map(|f| f.1), Some(9));
    assert_eq!(colon_fields(b"a:b:c:d:e:f:g:h:i:j", 0), None);
    assert_eq!(colon_fields(b"a:b\tc:d", 0), None);
    let fields = colon_fields(b"x\na:bb:c\n", 2).expect("fields").0;
    assert_eq!(&fields[..3], &[(2, 3), (4, 6), (7, 8)]);
}

/// A provider's keyword is found as any segment of a key, whatever keywords share its first
/// letters; a key whose segments only start like one (`checksum`, `chatty`) names no provider.
#[test]
fn keyword_segments_are_matched_past_keywords_sharing_their_first_letters() {
    let value = b"twz1tlejbh45vcwhtxgntrpqm5wzk72h";
    let keys: [(&[u8], bool); 9] = [
        (b"checklyhq", true),
        (b"CHECKLYHQ_TOKEN", true),
        (b"deployChecklyhq", true),
        (b"ci.checklyhq", true),
        (b"checksum", false),
        (b"checkly", false),
        (b"deployChecksum", false),
        (b"chatty_checklyh", false),
        (b"c", false),
    ];
    for (key, names) in keys {
        let found = crate::rules::keyword_match(key, value, crate::prefilter::keyword_may_start_at).is_some();
        assert_eq!(found, names, "{}", String::from_utf8_lossy(key));
    }
}

/// A token's counts read once ([`crate::judge::Runs`]) answer as the count checks asked in full:
/// on random tokens, and on tokens with a count, a filler run, two characters in turn, a closing
/// `example` or alternating case typed into them, the shapes that make a value typed by hand.
#[test]
fn token_counts_read_once_answer_as_each_count_check() {
    use crate::chars::{counted_by_kind, counted_through, fabricated, long_count, two_in_turn};
    use crate::judge::{Runs, alternating_count, mostly_one_count};
    let full = |v: &[u8]| {
        fabricated(v)
            || counted_through(v)
            || mostly_one_count(v)
            || alternating_count(v)
            || counted_by_kind(v)
            || long_count(v)
            || two_in_turn(v)
    };
    // Typed by hand, yet read once: a closing `example`, alternating case counting across digits,
    // letter blocks counting on across digits.
    for v in [
        &b"q7rkp2mwz9tbn4vexample"[..],
        b"A1b23C4d56E7f89G0h",
        b"abcd12efgh34ijkl",
    ] {
        let runs = Runs::of_token(v).expect("no count of six in a row");
        assert!(runs.typed_count(v) && full(v), "{}", String::from_utf8_lossy(v));
    }
    // Generated: no count.
    for v in [&b"Qm7xT2pL9vR4kW8zN3bY"[..], b"h4XrT9wQe2LmZ7pKv3Nc8BdY"] {
        let runs = Runs::of_token(v).expect("no count of six in a row");
        assert!(!runs.typed_count(v) && !full(v), "{}", String::from_utf8_lossy(v));
    }
    // A count of six in a row, or six of one character: the checks are asked in full.
    for v in [
        &b"Qm7xT2pLabcdefR4kW8z"[..],
        b"Qm7xT2pL000000R4kW8z",
        b"Qm7xT2pL9a8b7c6d5e4f",
    ] {
        assert!(
            Runs::of_token(v).is_none() && full(v),
            "{}",
            String::from_utf8_lossy(v)
        );
    }
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let plants: [&[u8]; 10] = [
        b"abcd",
        b"FEDC",
        b"7890",
        b"a1b2c3",
        b"zzzz",
        b"k7k7k7k7k7",
        b"AbCd",
        b"example",
        b"Mnopq",
        b"3c2b",
    ];
    let mut seed = 0x2545_f491_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed as usize
    };
    let (mut read, mut typed) = (0, 0);
    for round in 0..20_000 {
        let len = 16 + next() % 49;
        let mut v: Vec<u8> = (0..len).map(|_| alphabet[next() % alphabet.len()]).collect();
        for _ in 0..round % 4 {
            let plant = plants[next() % plants.len()];
            let at = next() % (len - plant.len());
            v[at..at + plant.len()].copy_from_slice(plant);
        }
        if let Some(runs) = Runs::of_token(&v) {
            read += 1;
            typed += usize::from(full(&v));
            assert_eq!(runs.typed_count(&v), full(&v), "{}", String::from_utf8_lossy(&v));
        }
    }
    assert!(read > 10_000 && typed > 0, "{read} read, {typed} typed");
}

/// A value of letters and digits alone is read only for the shapes it can have that name no
/// secret (a certificate's base64, a JOSE algorithm, Basic credentials of filler): the others
/// need a mark it lacks. A generated token of letters and digits, or one that starts like a
/// certificate, names a secret.
#[test]
fn letters_and_digits_name_no_secret_only_in_their_own_shapes() {
    holds_exactly(
        crate::judge::names_no_secret,
        &[
            b"MIIDtTCCAp2gAwIBAgIJAKf9x3y2Lm8qR4tZ7wN5vB1c",
            b"PS384",
            b"YWRtaW46YWFhYWFh",
        ],
        &[
            b"Kx9mQ2zTb7VwR4pN8cLf3HsJ",
            b"MIIDtTCCAp2gQx9mQ2zTb7VwR4pN8cLf3HsJ",
            b"PS385",
            b"YWRtaW46cTd4S3Bt",
        ],
    );
    assert!(find_secret("DEPLOY_PASSWORD=Kx9mQ2zTb7VwR4pN8cLf3HsJ").is_some());
}

/// Commands that take a password by a flag of their own: archivers (`zip`/`unzip -P`, `7z -p…`,
/// rar's `-hp…`), `ipmitool -P`, Sybase's `isql -P`, `bcp -P`, mosquitto's `-P`, SNMPv3's `-A`
/// and `-X`, sendEmail's `-xp`, `gh secret set --body`, curl's `--cert FILE:PASS`; the same flag
/// given a variable, asking for it, or on another command's line is none.
#[test]
fn a_commands_own_password_flag_holds_its_password() {
    assert_spans(&[
        ("cd /srv && unzip -oq -P T4vq9Lw2Rk monthly.zip", "T4vq9Lw2Rk"),
        ("zip -9 -P T4vq9Lw2Rk -r out.zip data", "T4vq9Lw2Rk"),
        ("7za x -pT4vq9Lw2Rk -o/tmp/x bundle.7z", "T4vq9Lw2Rk"),
        ("unrar x -hpT4vq9Lw2Rk pack.rar", "T4vq9Lw2Rk"),
        ("ipmitool -H bmc3 -U root -P T4vq9Lw2Rk sel list", "T4vq9Lw2Rk"),
        ("isql -U dbo -P T4vq9Lw2Rk -S TESTSRV", "T4vq9Lw2Rk"),
        ("mosquitto_sub -u dash -P T4vq9Lw2Rk -t '#'", "T4vq9Lw2Rk"),
        (
            "snmpbulkwalk -v3 -u ro -l authNoPriv -a MD5 -A T4vq9Lw2Rk sw2",
            "T4vq9Lw2Rk",
        ),
        (
            "snmpset -v3 -u rw -l authPriv -a SHA -A \"$A\" -x DES -X W8mz3Kp5Qn sw2 x s y",
            "W8mz3Kp5Qn",
        ),
        (
            "sendemail -s mx:25 -xu bot -xp T4vq9Lw2Rk -t a@b.example",
            "T4vq9Lw2Rk",
        ),
        ("gh secret set SLACK_HOOK --body T4vq9Lw2Rk", "T4vq9Lw2Rk"),
        (
            "curl -sS --cert me.pfx:T4vq9Lw2Rk --cert-type P12 https://x.example",
            "T4vq9Lw2Rk",
        ),
    ]);
    assert_clean(&[
        "unzip -P \"$ARCHIVE_PW\" monthly.zip",
        "zip -e -r out.zip data",
        "7za x -p -o/tmp/x bundle.7z",
        "unrar x -hp pack.rar",
        "ipmitool -H bmc3 -U root -E sel list",
        "isql -U dbo -P \"$SYB_PW\" -S TESTSRV",
        "snmpwalk -v3 -u ro -l authNoPriv -a MD5 -A \"$AUTH\" sw2",
        "mysql -hprod-db.example.com -u app",
        "tar -A -X exclude.txt -f all.tar part.tar",
        "gh issue create --body Investigate",
        "curl --cert C:\\certs\\me.pem https://x.example",
        "rar: -hp[password] encrypts both file data and headers",
    ]);
}

/// Commands that take a password by position: `rabbitmqctl add_user NAME PASS`
/// (`change_password`), `mosquitto_passwd -b FILE NAME PASS`, `db2 … using PASS`, wpa_cli's
/// `psk '"PASS"'`, Oracle's `user/PASS@db`, `openssl passwd [-6] [-salt S] PASS`; a variable,
/// a placeholder, a prompt (`/ as sysdba`, no `using`) or `-stdin` holds none.
#[test]
fn a_commands_positional_password_is_read_where_the_command_takes_it() {
    assert_spans(&[
        ("sudo rabbitmqctl add_user ci T4vq9Lw2Rk", "T4vq9Lw2Rk"),
        ("rabbitmqctl change_password ci T4vq9Lw2Rk", "T4vq9Lw2Rk"),
        ("mosquitto_passwd -b pw.txt cam1 T4vq9Lw2Rk", "T4vq9Lw2Rk"),
        ("db2 CONNECT TO prod USER etl USING T4vq9Lw2Rk", "T4vq9Lw2Rk"),
        ("wpa_cli set_network 1 psk '\"T4vq9Lw2Rk\"'", "T4vq9Lw2Rk"),
        ("sqlplus -L hr/T4vq9Lw2Rk@pdb1 @x.sql", "T4vq9Lw2Rk"),
        ("impdp hr/T4vq9Lw2Rk directory=d dumpfile=x.dmp", "T4vq9Lw2Rk"),
        ("HASH=$(openssl passwd -6 -salt ab12 T4vq9Lw2Rk)", "T4vq9Lw2Rk"),
    ]);
    assert_clean(&[
        "rabbitmqctl add_user ci \"$MQ_PW\"",
        "rabbitmqctl add_user <user> <password>",
        "rabbitmqctl list_users",
        "db2 connect to prod user etl",
        "db2 connect to prod user etl using $DB2PW",
        "sqlplus / as sysdba",
        "sqlplus hr@pdb1",
        "sqlplus hr/${HR_PW}@pdb1",
        "openssl passwd -6 -stdin < pw.txt",
        "wpa_cli set_network 1 ssid '\"Lab\"'",
    ]);
}

/// Library calls that take a password at a fixed place: .NET's `X509Certificate2(file, PASS)`,
/// Python's `load_pem_private_key(data, b"PASS")` and `FTP_TLS(host, user, PASS)`, Go's
/// `pkcs12.Decode(data, PASS)`, PHP's `new PDO(dsn, user, PASS)`, Ruby's
/// `OpenSSL::PKCS12.new(der, PASS)`, an LDAP `bind(dn, PASS)`, and Java's KeyStore given a
/// `"…".toCharArray()`; a variable, `None`, a call or a common name's other use is none.
#[test]
fn a_library_calls_password_argument_is_a_password() {
    assert_spans(&[
        ("c = new X509Certificate2(bytes, \"T4vq9Lw2Rk\");", "T4vq9Lw2Rk"),
        ("k = load_der_private_key(blob, b'T4vq9Lw2Rk')", "T4vq9Lw2Rk"),
        ("f = FTP(\"files\", \"me\", \"T4vq9Lw2Rk\")", "T4vq9Lw2Rk"),
        ("k, c, err := pkcs12.Decode(raw, \"T4vq9Lw2Rk\")", "T4vq9Lw2Rk"),
        ("$db = new PDO($dsn, 'app', 'T4vq9Lw2Rk');", "T4vq9Lw2Rk"),
        ("p = OpenSSL::PKCS12.new(der, \"T4vq9Lw2Rk\")", "T4vq9Lw2Rk"),
        (
            "ldap.bind(\"uid=svc,ou=apps\", \"T4vq9Lw2Rk\", done)",
            "T4vq9Lw2Rk",
        ),
        ("trust.load(null, \"T4vq9Lw2Rk\".toCharArray());", "T4vq9Lw2Rk"),
    ]);
    assert_clean(&[
        "c = new X509Certificate2(bytes, pfxPassword);",
        "k = load_der_private_key(blob, None)",
        "f = FTP(\"files\", \"me\", os.environ[\"FTP_PW\"])",
        "$db = new PDO($dsn, 'app', getenv('DB_PW'));",
        "handler.bind(this, \"T4vq9Lw2Rk\")",
        "cfg.load(\"settings\", \"T4vq9Lw2Rk\")",
        "ftp.login('anonymous', 'me@')",
        "user = UsmUserData(\"ro\", \"authName\", \"privName\")",
    ]);
}

/// After a prefix as distinctive as Anthropic's `sk-ant-api0N-`, a random body of another length
/// or ending than the documented one is still a key (the format has changed before); a body of
/// words, filler or an illustration too short to be a key stays ordinary.
#[test]
fn a_distinctive_prefix_with_a_random_body_of_another_length_is_a_key() {
    assert_found(&[
        "export ANTHROPIC=sk-ant-api03-RLrjcwNldl_fIU909ciUcQOC_ff4ZYAbrgq_L2OyPbuGPzKuGkSBul7_1dS4vEbLofc2cdS4gRl_4o1vrChR6WToTE",
        "it is sk-ant-api02-DxBTJhzTtIckPe51AQuvijZeFauzwYRQR1qzI_yat-W5nb8KOvjAQaVIx3Zyyeac6GWtAYrRH7sWp7VUqovJcICvKLu_Xo7pdhgCvwRJXbZ3Y6QR still works",
    ]);
    assert_clean(&[
        "keys look like sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "the format is sk-ant-api03-abc123-def456-ghi789 and so on",
        "set it to sk-ant-api03-put-your-own-anthropic-api-key-in-this-place-before-you-run-the-sample-app",
    ]);
}

/// Where a noun comes before its name (Italian, French), capitalised words between the secret word
/// and `is` name the provider: the random value after them is the secret. A word saying what
/// about the key it is (`ID`, `URL`, `Type`) names none, and a value of words stays a sentence.
#[test]
fn a_provider_named_between_a_secret_word_and_is_leaves_the_value_judged() {
    assert_found(&[
        "il token Fastly è Qx8vLm2RtY7nKp4ZwJ6cHs9D, ma non va",
        "la clé Mailjet Pro est 9fK2mXq7LpR4tZ8wVn3cYb6H depuis hier",
    ]);
    assert_clean(&[
        "the key ID is 7d3f9a2b1c4e5f60a8b9",
        "la chiave ID è 7d3f9a2b1c4e5f60a8b9",
        "the token URL is https://auth.example.com/x7Gk29QpLmZ3",
        "il token JWT è scaduto ieri",
        "la chiave Redis è user:session:42",
    ]);
}

/// Mailchimp's data-center suffix (`-us` and a number) after 32 random letters and digits of both
/// cases marks a key as it does after lowercase hex; hex in mixed case, or a name's words before
/// the suffix, does not.
#[test]
fn a_data_center_suffix_after_random_letters_and_digits_is_a_mailchimp_key() {
    assert_found(&["newsletter client uses L8Z8UcrakRFNWWSkCqbKYhTWj31TX9Nn-us14 since May"]);
    assert_clean(&[
        "newsletter client uses 51AB7e09cd44F2a61b0E98c3dd7A5f26-us14 since May",
        "the bucket is ReleaseArtifactsForMobileAppBuild2-us1 in S3",
    ]);
}

/// An index of one or two digits after a secret word numbers the key (`token 1 == …`, `key 2 = …`
/// in a note): the value after `=`, `==` or `is` is judged as it is without the index. A step's
/// number, or words after the index, stay ordinary.
#[test]
fn an_index_between_a_secret_word_and_its_value_numbers_the_key() {
    assert_found(&[
        "backup token 2 == 9c41e07b5fd2a83e61c0b47d92f5ae18c3d6b470",
        "api key 3 = Vq7Lm2XpR9tZ4wKc8Nb3",
    ]);
    assert_clean(&[
        "step 2 = 9c41e07b5fd2a83e61c0b47d92f5ae18c3d6b470",
        "the key 12 = value",
        "password 1 == hunter",
    ]);
}

/// A line that says its value will be rotated or revoked (`rotate it`, `revoke it`) makes a UUID
/// or bare hex on it a credential, as only a credential is rotated; an id named as one, or a
/// line that rotates logs or an image, stays ordinary.
#[test]
fn a_line_that_rotates_its_value_makes_an_ids_shape_a_credential() {
    assert_found(&[
        "try 0f4c2a9e-7b31-4d58-9e62-c1a8b3d07f45 on staging, then revoke it",
        "the webhook works with 3e9a71c4d8b2f06e5a19c7d4b82e0f63 for now; rotate it Friday",
    ]);
    assert_clean(&[
        "rotate the logs for 0f4c2a9e-7b31-4d58-9e62-c1a8b3d07f45 nightly",
        "job 0f4c2a9e-7b31-4d58-9e62-c1a8b3d07f45 failed again, rotate it to the next runner",
        "we revoke items listed in 0f4c2a9e-7b31-4d58-9e62-c1a8b3d07f45 weekly",
    ]);
}

/// A key ending in a setting's word (encryption, lifespan, duration) is read as a weak word's:
/// a generated value under it is a secret, a method or a duration is not. A security question's
/// answer is the secret itself.
#[test]
fn setting_words_after_a_secret_word_still_catch_generated_values() {
    assert_found(&[
        "ADMIN_SECRET_ENCRYPTION=Pw3Jr8Tz1Vb6Nk4Xm9Qc2Ls7Hd5Fg0Ye",
        "jwt_secret_lifespan: \"Ua5Zc9Re2Wq7Mt3Ky8Lp1Hb6Nx4Dv0Gs\"",
        "refreshTokenDuration = 'Lm7Qp2Xz8Wn4Rt9Kv3Bc6Hy1Js5Df0Ga'",
        "sso_password_encryption: Tb6Vx2Kq9Mz4Pn7Wr3Lc8Hj1Sd5Fy0Ga",
        "recovery_password_question_answer = Tabby1987#",
    ]);
    assert_clean(&[
        "ADMIN_SECRET_ENCRYPTION=aes-128-cbc",
        "jwt_secret_lifespan: 12h30m0s",
        "refreshTokenDuration = 86400",
        "sso_password_encryption: md5",
        "recovery_password_question = 'Which street did you grow up on?'",
    ]);
}

/// `Basic user:password` typed plain is the header's scheme only when spelt so and quoted or on a
/// line about an authorization or a header; `basic` before an image's or a job's `name:tag` is
/// an adjective.
#[test]
fn plain_basic_pairs_need_a_header_context() {
    assert_found(&[
        "conn.request(\"GET\", \"/\", headers={\"Authorization\": \"Basic deploy:Wn5vQ8xRz3Lk\"})",
        "let auth = 'Basic svc-bot:Hf7Tq2mXw9Pa';",
        "set the auth header to Basic ci_user:Jx4Rm8Kp2Qv7",
    ]);
    assert_clean(&[
        "start from a basic redis:7.2-alpine container",
        "the Basic Usage:Getting started section of the docs",
        "a basic postgres:16 sidecar is enough for tests",
        "Basic example:run the server first",
    ]);
}

/// A form body's next field may hold a path or a URL unescaped (`next=/home`): the password
/// before it ends at its `&`, and is judged alone.
#[test]
fn form_fields_with_paths_after_a_password_are_ordinary() {
    assert_found(&[
        "post password=Tq8vXm2Lk9Wz&next=/account",
        "the body is password=Hx4!rT9wKm2&redirect=/home",
    ]);
    assert_clean(&[
        "the body is password=letmein&return_to=/settings/profile",
        "login form: password=changeme&callback=https://example.com/cb",
    ]);
}

/// A non-null assertion between members (`res.body!.token!`) is code from a variable's lowercase
/// name; capitalised words joined by `!.` are a passphrase.
#[test]
fn asserted_member_paths_start_from_a_variable() {
    assert_found(&[
        "DB_PASSWORD=Purple.Monkey!.Dishwasher!",
        "secret: \"Blue.Ocean!.Sunset!\"",
    ]);
    assert_clean(&[
        "const token = res.body!.authToken!;",
        "password: form.fields!.password!",
    ]);
}

/// A form body's field holding a variable ends at its `&` (`password=$PASS&…`); a generated
/// password that starts with `$` or `%` is the secret, not a reference.
#[test]
fn form_references_are_variable_names() {
    assert_found(&[
        "curl -d \"password=%Wq8rT3nLz5K&grant_type=password\" $URL",
        "fetch(u, { body: \"password=$Tz4mKq9Wx2R&grant_type=password\" })",
    ]);
    assert_clean(&[
        "curl -d \"password=$ADMIN_PW&grant_type=password\" $URL",
        "body = `password=${creds.pw}&scope=openid`",
        "set DATA=password=%svc_pass%&grant_type=password",
    ]);
}

/// A file's path or a struct tag names things: a part mixing both cases with digits, or a
/// password's symbols, is the secret typed where a path or a tag could stand.
#[test]
fn paths_and_struct_tags_hold_names() {
    assert_found(&[
        "the admin password is Wq5/Lm8rTz.io",
        "api_token: `json:\"Rt7#kW2!xP\"`",
    ]);
    assert_clean(&[
        "the admin password is in deploy/prod-2nd/vault.yml",
        "Token string `json:\"access_token,omitempty\" db:\"token\"`",
    ]);
}

/// A type named for the key's word carries a version's or a service's number (`OAuth2`, `S3`);
/// a year in the name dates a value typed where a type could stand.
#[test]
fn types_named_for_the_key_carry_no_year() {
    assert_found(&[
        "auth:\n  token: Globex2025Token",
        "client_secret = Initech2019Secret",
    ]);
    assert_clean(&[
        "function load(token: Oidc2Token, next: Handler) {}",
        "type Session = { token: Saml2Token, user: User };",
    ]);
}

/// A short password flag belongs to its own command segment: an archive named elsewhere on the
/// line (`x.7z`, `out.zip`) neither turns off another command's spaced `-p` nor lends `-P` to
/// `rsync` or `wget`; and a flag named in prose (`-P option`) has no value.
#[test]
fn a_password_flag_belongs_to_its_own_segment() {
    assert_spans(&[
        (
            "7z e logs.7z -o/tmp && foo-admin -H db2 -u ops -p Zr8wq3LmV5Tx list",
            "Zr8wq3LmV5Tx",
        ),
        (
            "wget -q https://h.example/pkg.7z; tool login -u root -p Zr8wq3LmV5Tx",
            "Zr8wq3LmV5Tx",
        ),
        ("tar xf a.tar && zip -P Zr8wq3LmV5Tx -r b.zip b", "Zr8wq3LmV5Tx"),
    ]);
    assert_clean(&[
        "zip -r site.zip www && rsync -P site.zip mirror:/data/",
        "wget -P dl/ https://h.example/files.zip now",
        "the ipmitool -P option leaks the password to ps",
        "mosquitto_sub -P flag sets the password",
        "snmpget -X parameter sets the privacy passphrase",
    ]);
}

/// A plain `Basic user:password` pair in a sentence, out of any header, is still one when its
/// password is made strong (symbol, digit, both cases); a `name:tag` or `name:version` pair
/// after the adjective is not.
#[test]
fn a_plain_basic_pair_with_a_strong_password_needs_no_header() {
    assert_spans(&[
        (
            "sign in using Basic ops:Vb7%tQ2nW4z then retry",
            "ops:Vb7%tQ2nW4z",
        ),
        ("Basic root:Hy5&kd8Pq!", "root:Hy5&kd8Pq!"),
    ]);
    assert_clean(&[
        "build a basic redis:7.2-alpine image first",
        "in Visual Basic Button2:Click runs the handler",
        "a Basic debian:12.5 container will do",
    ]);
}

/// `gh secret set NAME --body VALUE` judges VALUE under NAME: a setting's name (`REGION`,
/// `BUCKET`) holds a password only when the value looks generated; a name that says secret
/// keeps a literal password.
#[test]
fn a_set_secrets_name_is_its_values_key() {
    assert_spans(&[
        ("gh secret set CACHE_BUCKET --body Qm4vT9xLr2Zp", "Qm4vT9xLr2Zp"),
        ("gh secret set SMTP_PASSWORD --body hunter2024", "hunter2024"),
    ]);
    assert_clean(&[
        "gh secret set CACHE_REGION --body eu-west-3",
        "gh secret set STAGE --body staging",
        "gh secret set API_HOST --body api.internal.example",
        "gh secret set SCHEMA --body billing_main_db",
    ]);
}

/// Oracle's `user/PASS` after `sqlplus`, `expdp`, `impdp`, `sqlldr` is a logon where the
/// command is typed (line start, prompt, `&&`) and the logon ends its arguments or meets
/// `@connect` / `@script`; the same words in a sentence (`in/out`, `a/b`, `dir/file.sql`) are not.
#[test]
fn an_oracle_logon_is_a_typed_commands_argument() {
    assert_spans(&[
        ("$ sqlplus hr/Tq7vLm2xR9 @report.sql", "Tq7vLm2xR9"),
        (
            "cd /u01 && impdp sys_dba/Tq7vLm2xR9 directory=d dumpfile=x.dmp",
            "Tq7vLm2xR9",
        ),
        ("Run expdp app/Tq7vLm2xR9@pdb1 schemas=app", "Tq7vLm2xR9"),
    ]);
    assert_clean(&[
        "Check that impdp read/write grants exist on the directory",
        "Call sqlldr before/after the nightly load",
        "sqlplus setup/install.sql runs only with @ in front",
        "expdp source/target schemas differ here",
    ]);
}

/// `rotate it` / `revoke it` makes an id's shape a credential, unless the word before the id
/// names the thing it identifies (a photo turned, a member's grant taken back); an id given for
/// a service, with nothing naming it, is still one.
#[test]
fn rotate_it_after_a_named_things_id_is_no_credential() {
    assert_spans(&[(
        "ok, take 7c9e6679-7425-40de-944b-e07fc1f90ae7 for the runner and revoke it Friday",
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    )]);
    assert_clean(&[
        "photo 7c9e6679-7425-40de-944b-e07fc1f90ae7 came out upside down, rotate it",
        "member 7c9e6679-7425-40de-944b-e07fc1f90ae7 got owner rights by accident; revoke it",
        "after git revert 9fceb02d0ae598e95dc970b74767f19372d61af8 please rotate it",
    ]);
}

/// curl's `--cert FILE:PASS` holds a passphrase; a PKCS#11 URI or a certificate store's name
/// (`pkcs11:…;…`, `store:…\…`) after the flag holds none.
#[test]
fn a_client_certificate_uri_holds_no_passphrase() {
    assert_spans(&[(
        "curl --cert ./client.p12:Wm3zR8qLt5Vx https://x.example",
        "Wm3zR8qLt5Vx",
    )]);
    assert_clean(&[
        "curl --cert 'pkcs11:object=edge-client;type=cert' https://x.example",
        "curl --cert CurrentUser\\\\My:Ab3d9f0e https://x.example",
    ]);
}

/// An anonymous FTP login's password, after the host, is a mail address by convention; a
/// named user's password in the same place is caught.
#[test]
fn an_anonymous_ftp_login_holds_no_password() {
    assert_spans(&[(
        "conn = FTP('files.example.org', 'mirror', 'Jq4vX8mT2wLz')",
        "Jq4vX8mT2wLz",
    )]);
    assert_clean(&[
        "conn = FTP('files.example.org', 'Anonymous', 'someone@example.org')",
        "conn = ftplib.FTP(\"mirror.example.org\", \"anonymous\", \"guest\")",
    ]);
}
