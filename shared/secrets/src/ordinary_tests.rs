//! Ordinary text that handles credentials without holding one (code, configs, docs, lockfiles)
//! stays clean, and the same shapes holding a credential are still caught: each judgment both ways.

use crate::findings;
use crate::tests::{assert_clean, assert_found};

#[test]
fn code_around_a_name_is_no_value() {
    assert_clean(&[
        "        $this->refreshToken = $refreshToken;\n        return ['refresh_token' => $this->refreshToken];",
        "\tsecret := &corev1.Secret{\n\t\tType: corev1.SecretTypeOpaque,\n\t}",
        "    @account = create_account(secret: @secret, secret_confirmation: @secret).tap(&:confirm)",
        "\t\tcase \"/oauth/access_token\":\n\t\t\t*tokenCount++",
        "    public function onLogout(Request $request, TokenInterface $token, string $firewall): ?Response",
        "            secret_key=auth_token,",
    ]);
    assert_found(&[
        "password: $uP3r-S3cret!9",
        "    token = \"&Zq8{pLm2x7Qw\"",
        "    $this->token = 'Zq8pLm2x7RtK4vWn';",
        "    secret_key=Zq8pLm2x7RtK4vWnB3cD5eF,",
        "client = Client(api_key=\"sk-proj-Zq8pLm2x7RtK4vWnB3cD5eF7gH9jK1lM2nP4qR6sT8uV0wX\", timeout=30)",
    ]);
}

#[test]
fn versions_constants_and_links_are_no_values() {
    assert_clean(&[
        "github.com/acme/docker-credential-gcr v0.0.0-20240117184556-1e3ab4c7d3f2/go.mod \
         h1:OuDyvmLnMCwa2ep4Jkm6nyA0ocJuZlGyk2gGseVzERM=",
        "\t\tstatic CasAuthenticationFilter CAS_AUTHENTICATION_FILTER;",
        "Looks like it is empty. Have you created the secret `DOCKERHUB_REGISTRY_TOKEN`?",
        "| <a id=\"opt-Auth\" href=\"#opt-Auth\">[PassTLSClientCert](passtlsclientcert.md)</a> | Adds certificates |",
        "    key: 'urn:ietf:params:oauth:jwk-thumbprint:sha-256:q1Xk9mRt3aZbYc7dLpE2vWnH0sJfGuT6iOy5KwMxA4B'",
        "Password=\\u30d1\\u30b9\\u30ef\\u30fc\\u30c9\nToken=\\u30c8\\u30fc\\u30af\\u30f3",
        "<input type=\"password\" name=\"password\" id=\"password\" autocomplete=\"current-password\">",
        "请在 `token` 的设置页面里生成新的令牌。",
        "    passwordResetState: 'PENDING',\n    token_extractor: 'cookie',",
    ]);
    assert_found(&[
        "go.sum says v1.2.3 but my token is v1Zq8pLm2x7RtK4vWnB3cD5eF7",
        "Did you add the secret `NPM_PUBLISH_TOKEN`? I set it to npm_Zq8pLm2x7RtK4vWnB3cD5eF7gH9jK1lM2nP4",
        "    password_confirmation: Zq8!pLm2x7",
    ]);
}

#[test]
fn the_slots_own_name_or_a_stand_in_is_no_value() {
    assert_clean(&[
        "{\"client_secret\": \"clientSecret\", \"refresh_token\": \"refreshToken\"}",
        "    'github-access-token': 'YOURGITHUBACCESSTOKEN',",
        "export MAILGUN_API_KEY=SomeRandomKeyString",
        "SESSION_SECRET=averyrandomstringthatlookslikeasecret",
        "    client = WebClient(token=\"xoxp-invalid\")",
        "    mock.respond({\"access_token\": \"github_token\", \"token_type\": \"bearer\"})",
        "    headers={\"Authorization\": \"Custom foobar\"}",
        "    headers = {\"Authorization\": \"Basic eHh4Onl5eQ==\"}",
        "DB_PASSWORD=prod-db-creds:password",
        "    api_token: ci/deploy#token",
        "    token = \"eyJhbGciOiJIUzI1NiJ9.payload.sig\"",
    ]);
    assert_found(&[
        "{\"client_secret\": \"clientSecret9Xq2\"}",
        // An owner before a one-word key is a weak password, not the slot's name.
        "Password=myPassword",
        "export MAILGUN_API_KEY=Xk9mRandomQ2zLp7",
        "    client = WebClient(token=\"xoxp-2345678901-3456789012-Zq8pLm2x7RtK4vWnB3cD5eF7\")",
        "    mock.respond({\"access_token\": \"ya29_Zq8pLm2x7RtK4vWnB3\", \"token_type\": \"bearer\"})",
        "    headers={\"Authorization\": \"Custom Zq8pLm2x7RtK4vWnB3cD\"}",
        "    headers = {\"Authorization\": \"Basic YWRtaW46WnE4IXBMbTJ4Nw==\"}",
        "DB_PASSWORD=Zq8:pLm2x7!",
        "    token = \"eyJhbGciOiJIUzI1NiJ9.e30.Zq8pLm2x7RtK4vWnB3cD5eF7gH9jK1lM2nP4qR6sT8u\"",
    ]);
}

#[test]
fn a_pem_header_quoted_in_code_or_sketched_is_no_key() {
    assert_clean(&[
        "if (pem.startsWith(\"-----BEGIN EC PRIVATE KEY-----\")) { return parseEc(pem) }",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n...\nb3BlbnNzaC1rZXktdjE...\n...\n-----END OPENSSH PRIVATE KEY-----",
    ]);
    assert_found(&[
        "if (pem.startsWith(\"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBkZ7Qf3mXr9Lq2WvYt8Np4Kc6Hs1Jd0Ge5Fb3Ax7\
         ZmoAoGCCqGSM49\\nAwEHoUQDQgAEq8Lm2Nx4Pv6Rz8Tb0Wd2Yf4Hh6Jj8Ll0Nn2Pp4Rr6Tt8Vv0Xx2Z\\n-----END EC PRIVATE KEY-----\")) {",
        // Alone on its line, a header may be a key cut short.
        "-----BEGIN PRIVATE KEY-----",
    ]);
}

#[test]
fn an_escaped_line_break_ends_a_value() {
    assert_clean(&["env = load(StringIO('USER=app\\rPASSWORD=password\\rHOST=db\\r'))"]);
    let text = "env = load(StringIO('USER=app\\rPASSWORD=Zq8!pLm2x7\\rHOST=db\\r'))";
    let spans: Vec<&str> = findings(text).iter().map(|f| &text[f.start..f.end]).collect();
    assert_eq!(spans, ["Zq8!pLm2x7"]);
    // A UNC path's backslashes are no escapes.
    assert_found(&["NET USE Z: \\\\nas01\\backup 2R97qvvnWk6b5 /USER:CORP\\backup"]);
}

#[test]
fn names_urls_and_interpolations_in_code_are_no_values() {
    assert_clean(&[
        "authorAvatar: 'https://avatars0.githubusercontent.com/u/8188?v=4&s=140'",
        "    authority = TestConstants.AuthorityUtid2Tenant;",
        "                    msalTokenResponse.AuthorityUrl = TestConstants.AuthorityUtid2Tenant;",
        "<sp:IncludeToken>http://schemas.xmlsoap.org/ws/2005/07/securitypolicy/IncludeToken/AlwaysToRecipient\
         </sp:IncludeToken>",
        "// token: https://ms.portal.azure.com/#@microsoft.onmicrosoft.com/asset/Microsoft_Azure_KeyVault/Secret/\
         https://msidlabs.vault.azure.net/secrets/ID4SLAB1",
        "                    \"credential_device_type\": \"\\(PasskeyCredentialDeviceType)\",",
        "            var cacheKey = $\"{_serviceBundle.Config.ClientId}__AppTokenCache\";",
        "  refresh_from_cookie: [secret: &MyApp.Secrets.for_conn/1]",
    ]);
    assert_found(&[
        "authToken: 'Zq8pLm2x7RtK4vWnB3cD5eF7'",
        "    authority_token = Zq8pLm2x7RtK4vWnB3cD5eF7;",
        // A dotted token is no member path: its parts are runs of mixed case and digits.
        "apikey: hvs.JGbZZaCkOSgsZ56uhGlTK2zyC1j2mwhy0VLp4",
        // A webhook's URL holds its key in the path.
        "    teams_hook_token: https://acme.webhook.office.com/webhookb2/8IoQDUDl-eqlp-q0zl@b4infsZa/IncomingWebhook/\
         SnuHwf1vaX7oNK32hSnCcLSNYFD8qtf",
        "token = https://user:Zq8pLm2x7Rt@api.example.com/v1",
    ]);
}

#[test]
fn prose_and_headers_that_name_a_credential_hold_none() {
    assert_clean(&[
        "        \"\"\"Test that ssl_password parameter is properly passed to SSLConnection\"\"\"",
        "5. Call the **token endpoint** from IMDS over **mTLS**:",
        "Authorization: Bearer ACCESS_TOKEN",
        "                            accessToken: 'invalid'",
    ]);
    assert_found(&[
        "        \"\"\"the ssl_password is Zq8!pLm2x7Rt\"\"\"",
        "5. Call it with the **token Zq8pLm2x7RtK4vWnB3cD5eF7**:",
        "Authorization: Bearer Zq8pLm2x7RtK4vWnB3cD5eF7",
        "                            accessToken: 'Zq8pLm2x7RtK4vWnB3cD5eF7'",
    ]);
}

#[test]
fn permissions_commands_and_slot_names_are_no_values() {
    assert_clean(&[
        "permissions:\n  contents: 'read'\n  id-token: 'write'",
        "\t\t\ttestDeviceToken: storage.DeviceToken{",
        "$psLoginSecrets = ConvertTo-SecureString $env:CLIENT_SECRET -AsPlainText -Force",
        "    loginConfig.servicePrincipalSecret = \"servicePrincipalSecret\";",
        "    $cred = ConvertTo-SecureString 'client-secret' -AsPlainText -Force",
    ]);
    assert_found(&[
        "permissions:\n  contents: 'read'\n  id-token: 'Zq8pLm2x7RtK4vWn'",
        "\t\t\ttestDeviceToken: Zq8pLm2x7RtK4vWn{",
        "$psLoginSecrets = 'Zq8!pLm2x7Rt'",
        "    loginConfig.servicePrincipalSecret = \"Zq8pLm2x7RtK4vWnB3cD\";",
        "    $cred = ConvertTo-SecureString 'Zq8!pLm2x7Rt' -AsPlainText -Force",
        // A value that calls itself real claims to be one.
        "password: \"real_key\"",
    ]);
}

#[test]
fn certificates_times_algorithms_and_ciphertext_are_no_secrets() {
    assert_clean(&[
        "<ds:KeyInfo><ds:X509Data><ds:X509Certificate>MIIDtTCCAp2gAwIBAgIJAKg4VeVcIDz1MA0GCSqGSIb3DQEBBQUAMEUxCzAJBgNV\
         BAYTAlVTMRMwEQYDVQQIEwpTb21lLVN0YXRlMSEwHwYDVQQKExhJbnRlcm5ldCBXaWRnaXRz</ds:X509Certificate></ds:X509Data>",
        "    session_token: \"2020-09-25T16:00:00+00:00\"",
        "            \"id_token_signed_response_alg\": \"HS384\",",
        "    settings.AUTHLIB_OAUTH1_PROVIDER = {\"signature_methods\": [\"RSA-SHA1\"]}",
        "    {'oauth_token': 'gA..H', 'oauth_token_secret': 'lp..X', 'oauth_callback_confirmed': 'true'}",
        "        response = self.client.post(\"/oauth2-read-write-test/\", HTTP_AUTHORIZATION=auth)",
        "    curl -X POST -d \"grant_type=password&username=<user_name>&password=<password>&scope=read\" \
         -u\"<client_id>:<client_secret>\" http://localhost:8000/o/token/",
        "\t\"github_oauth_token\": \"ENC[AES256_GCM,data:lVe1fLoILE8e/jiah90=,iv:6g350p9Id8+ssrV5lVEF4TWEnR+JfY84iUsh92/9XIQ=,\
         tag:2qojKddpx5lO1iR2dqLZJg==,type:str]\",",
        "        oauth_token = models.CharField(max_length=84, unique=True, db_index=True)",
    ]);
    assert_found(&[
        // A private key's DER has no certificate's version field.
        "<PrivateKey>MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDSqF1QwmVuTf27UDYzIWw7Fe2k5hC6LuIrusr5</PrivateKey>",
        "    session_token: \"2020-09-25T16:00:00+00:00Zq8pLm2x7RtK4\"",
        "            \"id_token_secret\": \"HS384Zq8pLm2x7RtK4vWn\",",
        "    {'oauth_token': 'gA8pLm2x7RtK4vWnB3cD', 'oauth_token_secret': 'lp8pLm2x7RtK4vWnB3cD'}",
        "        response = self.client.post(\"/oauth2-read-write-test/\", HTTP_AUTHORIZATION=\"Bearer Zq8pLm2x7RtK4vWn\")",
        "    curl -d \"grant_type=password&username=ops&password=Zq8!pLm2x7Rt&scope=read\" http://localhost:8000/o/token/",
        "        oauth_token = \"models.Zq8pLm2x7RtK4vWn\"",
        "<password>Zq8!pLm2x7Rt</password>",
    ]);
}

#[test]
fn documented_keys_version_ranges_and_change_me_phrases_are_no_secrets() {
    assert_clean(&[
        "\t\toption.WithAPIKey(\"144c9defac04969c7bfad8efaa8ea194\"),\n\t\toption.WithAPIEmail(\"user@example.com\"),",
        "  \"devDependencies\": {\n    \"@types/js-cookie\": \"^3.0.1\",",
        "SECRET_KEY = os.environ.get(\"DJANGO_SECRET_KEY\", \"django-insecure-change-me-in-production\")",
        "    private $accessTokenMethod = 'POST';",
    ]);
    assert_found(&[
        "\t\toption.WithAPIKey(\"8a67639f74080f56c5aa328f676226e2\"),",
        "  \"session_cookie\": \"^Zq8pLm2x7RtK4vWn\",",
        "SECRET_KEY = os.environ.get(\"DJANGO_SECRET_KEY\", \"django-insecure-5k#x9!q2zLp7rT4vWnB3cD5eF7gH9\")",
        "    private $accessToken = 'Zq8pLm2x7RtK4vWnB3cD';",
    ]);
}

#[test]
fn etags_namespaces_and_named_cookies_are_no_secrets() {
    assert_clean(&[
        "[('Vary', 'Accept, Authorization, Cookie, X-GitHub-OTP'), ('ETag', 'W/\"4539c5ec1d602de328c3b20478b62ed1\"'), \
         ('Last-Modified', 'Mon, 13 Aug 2018 17:17:09 GMT')]",
        "        cookie: `appSession=${signedCookieValue}`,",
        "    password: jiraToken",
        "        'user_credentials' => 'OAuth2\\\\Storage\\\\UserCredentialsInterface',",
    ]);
    assert_found(&[
        "[('Vary', 'Accept, Authorization, Cookie, X-GitHub-OTP'), ('X-Token', '4539c5ec1d602de328c3b20478b62ed1')]",
        "        cookie: `appSession=Zq8pLm2x7RtK4vWnB3cD`,",
        "    password: SuperSecretPassword",
        "        'user_credentials' => 'OAuth2\\\\Zq8pLm2x7RtK4vWnB3cD',",
    ]);
}

#[test]
fn an_id_a_log_line_labels_is_no_secret() {
    assert_clean(&[
        "The app secret was rejected. Request ID: 3f2b9c1e-7a4d-4e21-9b8f-0c5d6e7f8a9b, please retry",
        "refresh token issued for subject: 7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "Invalid client secret is provided. Trace ID: c3eebhh9-6158-5d6a-281f-dfhfhf6360131 Correlation ID: \
         478482h5-40d1-56ad-c617-72e3a7edd8a6",
    ]);
    assert_found(&[
        "my api key: 7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "the client secret for tenant: Zq8pLm2x7RtK4vWnB3cD5eF7",
    ]);
}

#[test]
fn a_property_list_key_names_the_entry_after_it() {
    assert_clean(&[
        "<dict>\n\t<key>NSAppTransportSecurityKey2Enabled</key>\n\t<false/>\n</dict>",
        "\t<key>CFBundleURLSchemesKey~iphone</key>\n\t<array>\n\t\t<string>myapp</string>",
    ]);
    assert_found(&["<key>Zq8p~Lm2x7RtK4vWnB3cD5eF7gH9j</key>"]);
}

#[test]
fn a_property_list_entry_named_for_a_secret_holds_it_in_its_string() {
    assert_clean(&[
        "	<key>API_KEY</key>
	<string>$(API_KEY)</string>",
        "	<key>TokenCacheEnabled</key>
	<string>YES</string>",
    ]);
    assert_found(&[
        "	<key>FirebaseAuthToken</key>
	<string>Zq8pLm2x7RtK4vWnB3cD5eF7</string>",
        "<key>API_SECRET</key><string>f6b41becf60d68dc061993a4f199d517d709b27f</string>",
    ]);
}

#[test]
fn json_members_after_a_bare_literal_stay_apart() {
    assert_clean(&[r#"{"Token":null,"Scope":"read","TenantId":"00000000-0000-0000-0000-000000000000"}"#]);
    assert_found(&[
        r#"{"Token":"Zq8pLm2x7RtK4vWnB3cD5eF7","Scope":"read"}"#,
        r#"{"secret":Zq8p!Lm2x7Rt,"x":1}"#,
    ]);
}

#[test]
fn code_spans_in_sentences_name_headers_and_flags() {
    assert_clean(&[
        "Set the header `X-Auth-Token: yourtoken`. Then retry.",
        "Pass the `--token` flag or set it in the config file.",
    ]);
    assert_found(&[
        "Set the header `X-Auth-Token: Zq8pLm2x7RtK4vWnB3cD5eF7`. Then retry.",
        "run `deploy --token Zq8pLm2x7RtK4vWnB3cD5eF7` to push",
    ]);
}

#[test]
fn locale_messages_are_no_values() {
    assert_clean(&[
        "  reset_token: パスワードをリセットするためのリンクを送信しました",
        "  regenerate_key: 重新生成后旧的密钥将立即失效，请及时更新您的配置",
    ]);
    assert_found(&["  api_key: Zq8pLm2x7RtK4vWnB3cD5eF7", "密码：Hx7q2Lm9Rt"]);
}

/// Words of a message glued before a generated run (`测试环境密钥` then the key) label it: the
/// value holds a token still.
#[test]
fn a_token_after_words_in_cjk_is_still_a_value() {
    assert_clean(&["  api_key: 请在控制台生成新的密钥，然后粘贴到这里（OAuth2 客户端）"]);
    assert_found(&[
        "api_key: 测试环境密钥Xq9mL2vR7pZ4kT8sW3nB",
        "  secret: 生产环境的密钥 hQ7vN2xR9kLm4TzW8pYc",
    ]);
}

#[test]
fn an_elided_token_or_a_jwt_header_alone_is_no_token() {
    assert_clean(&[
        "The access token looks like eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9... in the log",
        "the token header eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9 names the algorithm",
    ]);
    assert_found(&[
        "the token is eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzAwMDAwMDAwfQ.\
         c2lnbmF0dXJlLWJ5dGVzLWhlcmUtMTIzNDU2Nzg5MA",
    ]);
}

/// Only a token's JSON header is cut short to show its shape; a generated run before an
/// ellipsis is a token's own characters, and no fewer of them than a token holds.
#[test]
fn a_generated_run_before_an_ellipsis_is_still_a_token() {
    assert_clean(&[
        "The access token looks like eyJhbGciOiJSUzI1NiIsImtpZCI6Ij... in the log",
        "the token eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9\u{2026} was cut",
    ]);
    assert_found(&[
        "my api token is Hq7vN2xR9kLm4TzW8pYc3BdF... and it fails",
        "the token 5fK2qW9xZ7mR3vT8nB4yH6jL1cP0\u{2026} was rejected",
    ]);
}

/// A UUID labelled right after a secret word and its scope (`api key for the app:`) is that
/// secret; one a log line labels apart from it (`Request ID:`, `issued for subject:`) an id.
#[test]
fn a_uuid_after_a_secrets_scope_is_the_secret() {
    assert_clean(&[
        "The app secret was rejected. Request ID: 3f2b9c1e-7a4d-4e21-9b8f-0c5d6e7f8a9b, please retry",
        "refresh token issued for subject: 7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "the api key for tenant_id: 7c9e6679-7425-40de-944b-e07fc1f90ae7 was revoked",
    ]);
    assert_found(&[
        "my heroku api key for the app: 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
        "here is the client secret for staging: 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
        "the `HEROKU_API_KEY` on prod: 3f2a9c1e-7b4d-4e8a-9c2f-1a6b8d0e5f73",
    ]);
}

/// Python's named format slot (`%(password)s`) is a template in any quoting, as `%s` is; a
/// password that only holds `%(` is typed.
#[test]
fn a_named_format_slot_is_a_template() {
    assert_clean(&[
        "password = '%(password)s'",
        "    password = \"\"\"%(db_password)s\"\"\"",
        "dsn = 'postgresql://%(user)s:%(password)s@%(host)s:%(port)d/app'",
    ]);
    assert_found(&["password = 'Zq8%(Lm2x)sRt4'", "password = '%(Zq8pLm2x7Rt'"]);
}

#[test]
fn method_chains_interpolations_and_dereferences_are_code() {
    assert_clean(&[
        r#"val secret = (prefix("sk").orElse(any).rep ~ end).string"#,
        "  foreach my $k (keys %{$self->{tokens}}) {",
        r#"return token.StartsWith("Bearer ") ? token : $"Bearer {token}";"#,
    ]);
    assert_found(&[
        r#"val secret = "Zq8p(Lm2x7)RtK4vWn""#,
        r#"return token.StartsWith("Bearer ") ? token : $"Bearer Zq8pLm2x7RtK4vWnB3cD5eF7";"#,
    ]);
}

#[test]
fn a_credential_type_written_where_it_goes_is_a_stand_in() {
    assert_clean(&[
        "git clone https://octocat:personal-access-token@github.com/octo/repo.git",
        r#"{"token": "accesstoken"}"#,
    ]);
    assert_found(&[
        "git clone https://octocat:Zq8pLm2x7RtK4vWn@github.com/octo/repo.git",
        r#"{"password": "adminpassword"}"#,
        r#"{"token": "acc3sst0ken9Xq"}"#,
    ]);
}

#[test]
fn a_json_null_or_a_slot_asking_for_the_value_is_no_secret() {
    assert_clean(&[
        r#"{"secret":null,"data":{"error":"permission denied"},"redirect":""}"#,
        r#"new TokenAuthMethodInfo(vaultToken: "real-token-here");"#,
        r#"client = Client(api_token="put_your_token_here")"#,
    ]);
    assert_found(&[
        r#"{"secret":Zq8p!Lm2x7Rt,"data":{}}"#,
        r#"new TokenAuthMethodInfo(vaultToken: "s3cr3tTokenHere9Xq");"#,
        r#"curl -H "X-Vault-Token:9b67f103-c54e-2ed7-ce43-83ac891ead16" https://vault:8200/v1/auth/token/lookup-self"#,
    ]);
}

#[test]
fn a_source_map_cut_before_its_string_closes_reads_as_lines() {
    assert_clean(&[
        r#"{"version":3,"sourcesContent":["/**\n * let channel = socket.channel(\"room:42\", {token: roomToken})\n * channel.join()\n *   .receive(\"ok\", resp => console.log(\"joined\", resp) )"#,
    ]);
    assert_found(&[
        r#"{"version":3,"sourcesContent":["const client = init({\n  token: \"Zq8pLm2x7RtK4vWnB3cD5eF7\",\n  retries: 3\n})\nexport default client"#,
        r#"{"version":3,"sourcesContent":["export const config = {\n  apiKey: \"sk_live_4eC39HqLyjWDarjtT1zdp7dc9Xq\",\n"#,
    ]);
}

#[test]
fn a_variable_naming_where_the_secret_is_kept_is_no_secret() {
    assert_clean(&[
        r#"let dbPassword = try await Environment.secret(key: "POSTGRES_PASSWORD_FILE")"#,
        r#"secret = "DB_PASSWORD_FILE""#,
        r#"token_env = "GH_TOKEN_VAR""#,
    ]);
    assert_found(&[
        r#"password = "Zq8pLm2x7RtK_FILE""#,
        r#"let dbPassword = try await Environment.secret(key: "Zq8pLm2x7RtK4vWnB3cD5eF7")"#,
    ]);
}

#[test]
fn a_vendor_prefix_before_a_wildcard_is_no_key_and_before_counts_is_one() {
    assert_clean(&[
        "GITHUB_TOKEN=ghp_* works here, a fine-grained one (github_pat_…) does not",
        "set STRIPE_WEBHOOK_SECRET=whsec_* from the dashboard, not sk_live_*",
    ]);
    assert_found(&[
        // Letters and digits counted after a vendor's prefix are what a user types to try the
        // filter as often as a tutorial's stand-in: withheld, the safe side.
        "# sample .env for the guide\nSTRIPE_API_KEY=sk_test_abc123def456\nPORT=3000",
        "# .env\nOPENAI_API_KEY=sk-proj-abc123\nMODEL=gpt-4o",
        "use key sk-live-abcdef123456 for the test",
        "# sample .env for the guide\nSTRIPE_API_KEY=sk_test_Zq8pLm2x7RtK4vWnB3cD5eF7\nPORT=3000",
        "set STRIPE_WEBHOOK_SECRET=whsec_Zq8pLm2x7RtK4vWnB3cD5eF7gH9jK1lM from the dashboard",
        // Counts again from the start: a repeated unit, no pair of counts.
        "STRIPE_API_KEY=sk_test_abc123abc123",
        "# .env\nOPENAI_API_KEY=sk-proj-Zq8pLm2x7RtK4vWnB3cD5eF7gH9jK1lM\nMODEL=gpt-4o",
    ]);
}

#[test]
fn a_stand_in_with_a_number_of_its_own_or_a_redaction_glued_is_no_value() {
    assert_clean(&[
        "JWT_SECRET=your-512-bit-secret\nJWT_TTL=3600",
        "curl -u 'account-SID:account-token' https://api.example.org/v1/calls",
        "-H \"Authorization: Bearer q8ZkWm3nRedactedToken\" is what I send",
        "access_token=Lm2x7CENSORED in the log line above",
        "never commit a line like SECRET_KEY = 'an-insecure-key-42' to the repository",
    ]);
    assert_found(&[
        // Glued to a word, a number makes a password; no marker word, no stand-in.
        "JWT_SECRET=Secret512bit\nJWT_TTL=3600",
        "JWT_SECRET=purple-512-monkey\nJWT_TTL=3600",
        "SECRET_KEY = 'django-insecure-q8zk3mx7w2p9rt4v6b1n0c5j8hLm2x7Rt'",
        "curl -u 'account-SID:Zq8pLm2x7RtK4vWn' https://api.example.org/v1/calls",
        "-H \"Authorization: Bearer q8ZkWm3nRtK4vWnB3cD5eF7gH9\" is what I send",
    ]);
}

#[test]
fn a_call_opened_at_the_end_of_a_line_is_code() {
    assert_clean(&[
        "var apiToken = JsonConvert.DeserializeObject<TokenSettings>(\n    File.ReadAllText(path));",
    ]);
    assert_found(&["var apiToken = Zq8pLm2x7RtK4vWnB3cD5eF7gH9;\nvar tokenSettings = Load(path);"]);
}

#[test]
fn words_listed_or_closed_in_a_sentence_and_printed_key_ids_are_no_values() {
    assert_clean(&[
        "    Host build\n        PreferredAuthentications publickey,keyboard-interactive,password\n        User ci",
        "/* read the token value*/\nconst t = store.get();",
        "gpg: using key KEY_CONSIDERED 3F2A9C41D07E5B86A1C4E9F20B7D36A58E1C4F92 0\ngpg: signing failed",
    ]);
    assert_found(&[
        "    Host build\n        PreferredAuthentications Zq8pLm2x7Rt,K4vWnB3cD5eF\n        User ci",
        "/* read the token Zq8pLm2x7RtK4vWn*/\nconst t = store.get();",
        "gpg: using key KEY_CONSIDERED 3f2a9c41d07e5b86a1c4e9f20b7d36a58e1c4f92 0\ngpg: signing failed",
    ]);
}

#[test]
fn random_letters_joined_by_an_ampersand_are_a_password_and_a_conjunction_is_not() {
    assert_found(&[
        "database:\n  user: app\n  password: qWkhO&pToPbF\n  host: db",
        "[db]\npassword: RzTqW&mKpLbN",
    ]);
    assert_clean(&[
        "database:\n  user: app\n  password: &defaultPassword\n  host: db",
        "database:\n  user: app\n  password: userName&mask\n  host: db",
    ]);
}

#[test]
fn a_request_line_a_program_expansion_and_a_swift_call_are_no_values() {
    assert_clean(&[
        "POST /oauth/token HTTP/1.1\nHost: auth.example.com\nContent-Type: application/json",
        "GET /v2/token RTSP/1.0\nCSeq: 2",
        "    settings.security.admin_password = \"$__file{/run/secrets/grafana-admin}\";",
        "[security]\nadmin_password = $__env{GF_ADMIN_PASS}",
        "request.allHTTPHeaderFields = [\"Authorization\": \"Bearer \\(Keychain.read(\"accessToken\") ?? \"\")\"]",
    ]);
    assert_found(&[
        "POST /oauth/token Zq8pLm2x7RtK4vWnB3cD5eF\nHost: auth.example.com\nContent-Type: application/json",
        "GET /v2/token Xq7/1.0Zq8pLm2x7RtK4vWn\nCSeq: 2",
        "    settings.security.admin_password = \"Zq8pLm2x7RtK4vWn\";",
        "[security]\nadmin_password = $__Zq8pLm2x7{RtK4vWn9}",
        "request.allHTTPHeaderFields = [\"Authorization\": \"Bearer Zq8pLm2x7RtK4vWnB3cD5eF7gH9\"]",
    ]);
}

#[test]
fn some_before_the_key_s_own_word_is_a_stand_in() {
    assert_clean(&[
        "<server>\n  <id>server001</id>\n  <passphrase>some_passphrase</passphrase>\n</server>",
        "PASSPHRASE=some_passphrase\nKEY_FILE=~/.ssh/id_ed25519",
        "{\"signing_secret\": \"someSigningSecret\"}",
    ]);
    assert_found(&[
        "<server>\n  <id>server001</id>\n  <passphrase>my_passphrase</passphrase>\n</server>",
        "PASSPHRASE=some_Zq8pLm2x7Rt\nKEY_FILE=~/.ssh/id_ed25519",
        "{\"signing_secret\": \"someSigningSecret9Zq8pLm2x\"}",
    ]);
}

#[test]
fn a_digest_in_a_printed_table_s_digest_column_is_no_value() {
    assert_clean(&[
        "$ fly secrets list\nNAME                DIGEST              CREATED AT\n\
         DATABASE_URL        a9f3c2e1b7d04e5f    2024-01-15T10:00:00Z\n\
         SECRET_KEY_BASE     7c1e9d2a4b6f8031    2024-01-15T10:00:00Z",
    ]);
    assert_found(&[
        "$ fly secrets list\nNAME                VALUE               CREATED AT\n\
         DATABASE_URL        a9f3c2e1b7d04e5f    2024-01-15T10:00:00Z\n\
         SECRET_KEY_BASE     7c1e9d2a4b6f8031    2024-01-15T10:00:00Z",
        "SECRET_KEY_BASE     7c1e9d2a4b6f8031    2024-01-15T10:00:00Z",
    ]);
}

/// A connection string's template with its password in angle brackets goes on with `@` and the
/// host; read from the stand-in's bracket, that rest is no value. A password there is found.
#[test]
fn the_host_after_a_stand_in_password_is_no_value() {
    assert_clean(&[
        "MONGODB_URI=mongodb+srv://ana:<db_password>@cluster7.q2w3e.mongodb.net/?retryWrites=true&w=majority",
        "CACHE_URL=\"redis://default:<password>@cache-20411.c9.eu-west-1-3.ec2.example.com:20411\"",
        "url = \"postgresql://app:<your_password>@localhost:5432/shop?schema=public\"",
        "broker: amqps://svc:<secret>@b-77aa.mq.eu-central-1.example.com:5671?heartbeat=60",
    ]);
    assert_found(&[
        "MONGODB_URI=mongodb+srv://ana:Qv8rT2mLx9Kp4Wz@cluster7.q2w3e.mongodb.net/?retryWrites=true&w=majority",
        "<password>Qv8rT2mLx9Kp4Wz@cluster7</password>",
    ]);
}

/// A chart's values name the entry of a Kubernetes Secret that holds each password, in lower
/// case words ending in the key's own secret word; a password on that line is still found.
#[test]
fn a_charts_secret_entry_name_is_no_password() {
    assert_clean(&[
        "auth:\n  existingSecret: shop-db\n  secretKeys:\n    adminPasswordKey: postgres-password\n    replicationPasswordKey: replication-password",
        "redis:\n  auth:\n    existingSecretPasswordKey: redis-password",
    ]);
    assert_found(&[
        "auth:\n  secretKeys:\n    adminPasswordKey: postgres-password\n  password: Wq8zLm2vRt5x",
        "redis:\n  auth:\n    password: StormyHarbourLantern",
    ]);
}

/// Words a sentence lists with commas or semicolons after a secret word, capitalised or
/// abbreviated (a CSV header's cells: `… key ID,Secret access key`), are words; a generated
/// value in the same place, or the row of values under that header, is a secret.
#[test]
fn capitalised_words_listed_after_a_secret_word_are_words() {
    assert_clean(&[
        "Columns: Tenant,Client ID,Client secret,Expiry date",
        "the export has these fields: Token Name;Scope;Created",
        "rename the api key Label,Owner columns before the import",
    ]);
    assert_found(&[
        "Access key ID,Secret access key\nAKIA4P5OOXRPTIGOD6FE,iI1gIucQorgKgEuCkK+nIzFC5b+rcdfq1xa9nFR6",
        "the api key Kx9mQ2,vW7pLz was rotated",
        "my password is Zq8,pLm2x7",
    ]);
}

/// A value its vendor's prefix calls public (a Supabase publishable key, a Datadog browser
/// client token) is no secret under any key; the same vendors' secret kinds are.
#[test]
fn a_value_public_by_its_prefix_is_no_secret() {
    assert_clean(&[
        "datadogRum.init({ applicationId: 'web', clientToken: 'pub7d3f9a1c0b2e4d6f8a9c1b3e5d7f9a0c' })",
        "SUPABASE_ANON_KEY=sb_publishable_Rk2vT9qLm4Xw8ZpN3cJ6hF1s",
    ]);
    assert_found(&[
        "DD_API_KEY=7d3f9a1c0b2e4d6f8a9c1b3e5d7f9a0c",
        "clientToken: 'tok7d3f9a1c0b2e4d6f8a9c1b3e5d7f9a0c'",
        "SUPABASE_SERVICE_KEY=sb_secret_Rk2vT9qLm4Xw8ZpN3cJ6hF1s",
    ]);
}

/// A token that marks a place in a listing or a stream (`nextPageToken`, `$deltatoken`, a resume
/// or continuation token) or a request's idempotency key is no credential; the same API's
/// access token is.
#[test]
fn a_token_marking_a_place_in_a_listing_is_no_credential() {
    assert_clean(&[
        "{\"files\": [], \"nextPageToken\": \"Zk3-pQ9xLm2_vT8wRc4NbY7d\"}",
        "drive.files().list(pageToken=\"b7Qz-Lk2xPm9_Wv4Tn8RcJ3d\", pageSize=50)",
        "GET /me/messages/delta?$deltatoken=Xq8vLm2_Tz9pKw4-Rb7NcY3dHf6J",
        "resume_token: 8260Bz4KLm2QxT9vPw7RnC3dYf",
        "Idempotency-Key: 0b8f2c4e-7d1a-4e93-b6a5-2f9c8d7e1a30",
    ]);
    assert_found(&[
        "{\"files\": [], \"accessToken\": \"Zk3-pQ9xLm2_vT8wRc4NbY7d\"}",
        "AUTH_TOKEN=b7Qz-Lk2xPm9_Wv4Tn8RcJ3d",
    ]);
}

/// A listing's or a stream's word marks a place only before a token or a key: a password, a
/// secret or an API key that syncs, pages or resumes is still a credential.
#[test]
fn a_position_word_before_a_password_or_an_api_key_keeps_it_a_credential() {
    assert_clean(&[
        "sync_key: zymMlopiWfqUyHRSIf8NFmAUNLnY",
        "{\"cursorToken\": \"5Yx0y3RnjDQl2Kvf8THRXfEuzcrJaB\"}",
    ]);
    assert_found(&[
        "REPLICA_SYNC_PASSWORD=nx7IfDH5mMDdwin86TkVYCM7l8",
        "cursor_secret: \"GQlchbkER0Af7BOfjtNayviHzm5YdOnC\"",
        "export CURSOR_API_KEY=qIz0Wiw8SE7diV3TMXVjM8AhghjsllAj7n4JuXFZ",
        "paging_apikey = 'o2qh20xlReGsaL1dvnyzv0ZzyA0xIf'",
    ]);
}

/// Emphasis or a typographic dash makes words prose only when what they hold is written words or
/// numbers: a generated run in them (mixed case, digits among letters, symbols) is a password.
#[test]
fn emphasis_or_a_typographic_dash_around_a_generated_run_is_no_prose() {
    assert_clean(&[
        "password: __Mandatory__",
        "DB_PASSWORD: **UNSET**",
        "token: issued 2021–2025—rotated yearly",
        "secret: Store it in the vault—do not paste it",
    ]);
    assert_found(&[
        "password: **YodAczSbvWcdY**",
        "DB_PASSWORD=__LhaAzaLutPtoEcf__",
        "password: \"Winter—Th2aGF9#49peQ\"",
        "api_key: I6DeMRfGLcr0JePtE2wrpP–7mD4HQb8G7",
    ]);
}

/// Under a password's label in a translation file, one word holding a number is the password,
/// not the label's translation; a translation in words, or one naming the credential, is text.
#[test]
fn one_numbered_word_under_a_password_label_is_a_password() {
    assert_clean(&[
        "{\"Step 2 Password\": \"Passwort Schritt 2\", \"Password Hint\": \"Passwort-Hinweis\"}",
        "{\"Confirm Password\": \"Passwort bestätigen\", \"Password 2\": \"Passwort-Schritt-2\"}",
        "{\"Token Expired\": \"Token-abgelaufen-401\"}",
    ]);
    assert_found(&[
        "{\"Admin Passwort\": \"Herbst-Wald-7391\"}",
        "\"Wifi Password\" = \"Żaba-5820-Las\";",
    ]);
}

/// The id an event's, an object's or a release's word names is in one case; a run mixing both
/// cases after such a word, on a line about tokens, is the token.
#[test]
fn a_mixed_case_run_after_an_object_word_is_a_token() {
    assert_clean(&[
        "token rotation broke release 81d25b3151f9, see object d7cde5e034e786ad7f697bdc32a866b7",
        "instance 01J4KSWQV7KY65K23CH43SVN6C rejected the API token",
    ]);
    assert_found(&[
        "release mO6TIrZefQ1LVJ48ZCA32LY6JgkNZU5dsy8rpIiK is my token, keep it safe",
        "the object Ey15tvP3PPdmvuHnMb1szqbO8hWcnonuJhKF is the access token for the bucket",
    ]);
}

/// Secret in German, Portuguese, Italian, Spanish, Polish, Swedish and Russian names a
/// credential when a generated value follows; as a sentence's noun (`the secret of success`) it
/// takes a path, a name or an id its own word names.
#[test]
fn secret_in_another_language_takes_a_generated_value() {
    assert_clean(&[
        "O segredo do sucesso é o commit 3f9a2c7e1b4d8f60a5c2e9b7d1f3a6c8e0b2d4f6",
        "Das Geheimnis liegt in der Datei config/app.yml",
        "Il segreto è usare la cache con la chiave user:42",
        "Los secretos de Kubernetes se guardan en etcd",
    ]);
    assert_found(&[
        "Geheimnis: oCCxKr1vIWc7C6QNJyMs4h7hSe4vg2V7",
        "{\"segredo\": \"6a1PKvsLrgOQ3ntGi0Z0ALZcwNjKHe\"}",
        "el secreto del webhook es IIQr3XSFgJCkaCqnQKyfylZ8EVeI",
        "секрет = \"z4J7utmglhJ1LcaEL4qPr0akShZ5PFyh\"",
        "hemlighet=PQF0zBzCvLROOJwRIMGdNZd40x",
    ]);
}

/// A bare `key` declared with its type or keyword (`string key`, `Dim key As String`, `const
/// key`) names an entry as a bare `key` at a line's start does: a digest there is the entry's
/// name; a generated value is still a key.
#[test]
fn a_declared_bare_key_holding_a_digest_names_an_entry() {
    assert_clean(&[
        "string key = \"5e0b7c2d9a4f1e8b3c6d0a7f2e9b4c1d8a5f3e60\";",
        "Dim key As String = \"a41c9e7f2b0d8c3e6f1a5b9d4e7c2f08d3b6e1a9\"",
        "const key = \"e83b2f0c7d1a9e4f6b3c8d2a0f5e7b19\";",
    ]);
    assert_found(&[
        "Dim key As String = \"Rk4mT9vQ2xLp7WnZ3cYb8HdJ\"",
        "string key = \"Hq7Lw2Zp9Xk4Tm8Rv3Nc6Yb1\";",
        "Dim apiKey As String = \"a41c9e7f2b0d8c3e6f1a5b9d4e7c2f08\"",
    ]);
}

/// An id the word before it names (Sentry's `event …`, a message's, a deployment's) is no
/// token, even in a line about tokens; the token a sentence names is.
#[test]
fn an_event_or_message_id_in_a_line_about_tokens_is_an_id() {
    assert_clean(&[
        "event 9c2e7a41d0b83f56e1a4c7d92b0f6e38 failed to refresh the token",
        "message 7f3a9c1e5b2d8046a9e1c3b5d7f90214 was rejected: token expired",
        "deployment 4e8b2d6f0a1c3e5b7d9f1a3c5e7b9d02 rolled back after the token rotation",
    ]);
    assert_found(&[
        "the token 9c2e7a41d0b83f56e1a4c7d92b0f6e38 expired",
        "my api token is 7f3a9c1e5b2d8046a9e1c3b5d7f90214",
    ]);
}

/// A translation file's entry: an interface's sentence as the key, its translation as the value,
/// a phrase in any language or one word naming the credential; a passphrase typed in lowercase, a
/// word with a digit or a generated run under such a key is still a value.
#[test]
fn translated_interface_text_is_no_value() {
    assert_clean(&[
        "\"Wrong passphrase\": \"Frase de contraseña errónea\"",
        "\"Show the token again\": \"Token erneut anzeigen\",\n\"Signing key\": \"Clé de signature\"",
        "\"Paste the webhook secret - Hint\": \"Вставьте секрет вебхука сюда\"",
        "\"Recovery password\": \"Wiederherstellungspasswort\"",
        "\"Token revoked\": \"令牌已撤销，请重新登录。\"",
        "\"Your session key expired\": \"セッションキーの有効期限が切れました、再度ログインしてください\"",
    ]);
    assert_found(&[
        "\"Admin Password\": \"violet meadow lantern drift\"",
        "\"Recovery password\": \"Wiederherstellung42\"",
        "\"Signing key\": \"Qm7vR2xK9pLw4TzN8cYd\"",
        "\"Webhook secret\": \"Hz4Kq9mW Lp2xR7vT\"",
    ]);
}

/// A value addressed to the reader (`your-…`) or a sentence about itself of six words or more,
/// perhaps holding a count or an algorithm's name, is a stand-in; a passphrase of a few words, or
/// random parts after `your`, is a value.
#[test]
fn sentences_in_a_value_are_stand_ins() {
    assert_clean(&[
        "password: your-db-pass-goes-in-vault",
        "\"secret\": \"your-hmac-secret-at-least-32-chars\"",
        "SIGNING_SECRET=a-throwaway-secret-only-for-the-demo-stack",
        "  secret: alice-hs512-secret-that-is-long-enough",
    ]);
    assert_found(&[
        "password: tulip-orbit-canyon-57",
        "password: your-Qm7v-Rx2K9",
        "SIGNING_SECRET=Qm7vR2xK9pLw4TzN8cYd",
    ]);
}

/// A name where the value goes: a token's name in a password's place, an entry's name under a key
/// naming where a password is kept; a cleared cookie; a secret store's path passed inside a
/// call's string; an empty value before the next entry at the same depth.
#[test]
fn names_paths_and_empty_entries_are_no_values() {
    assert_clean(&[
        "{\"login\": \"ci\", \"password\": \"registry-deploy-token\"}",
        "  secretKeys:\n    userPasswordKey: app-user-password",
        "Set-Cookie: csrf_state=; Path=/; Max-Age=0",
        "  token: \"{{ lookup('hashi_vault', 'secret=kv/data/shop:deploy_token') }}\"",
        "@@ -2,3 +2,3 @@\n APP_ENV=dev\n-MAILER_KEY=\n+MAILER_API_KEY=mk_demo_replace_me",
    ]);
    assert_found(&[
        "{\"login\": \"ci\", \"password\": \"real-deploy-token\"}",
        "  secretKeys:\n    userPasswordKey: Qm7vR2xK9pLw4TzN8cYd",
        "Set-Cookie: sid=Qm7vR2xK9pLw4TzN8cYdH3; Path=/",
        "  run('token=Qm7v/R2xK9:pLw4+TzN8')",
        "mailer_key =\n    Qm7vR2xK9pLw4TzN8cYd",
    ]);
}

/// Names OAuth, OpenID Connect and JOSE register (an encryption's or a key wrap's algorithm, a
/// client's authentication method, a scope list), a word in Markdown's emphasis and an environment
/// variable's name with a digit in a word are no values; a generated value in the same places is.
#[test]
fn registered_names_emphasis_and_setting_names_are_no_values() {
    assert_clean(&[
        "        id_token_encrypted_response_enc: 'A256GCM'\n        userinfo_encrypted_response_alg: 'ECDH-ES+A128KW'",
        "  \"token_endpoint_auth_method\": \"private_key_jwt\"",
        "- Token scope: `openid offline_access profile`",
        "The runner sends its token **only** once, then its id.",
        "Keep the token in `RUNNER_S3_CACHE_KEY_ID` and the bucket in the same namespace.",
    ]);
    assert_found(&[
        "  \"client_secret\": \"Qm7vR2xK9pLw4TzN8cYd\"",
        "- Token: `Qm7vR2xK9pLw4TzN8cYdH3sL`",
        "Keep the token Qm7vR2xK9pLw4TzN8cYdH3sL in the same namespace.",
    ]);
}

/// The word for secret in a language under a one-word key is a translation's label, and any
/// rule's reading of a word inside a translation's text (a scheme's word opening it) is none; a
/// generated value there, or a word with a digit, is a value.
#[test]
fn translated_labels_hold_no_value() {
    assert_clean(&[
        "\"Secret\": \"Segreto\"",
        "\"Token copied\": \"Token kopiert, bitte sicher aufbewahren\"",
        "\"Password kind\": \"Passworttyp\"",
    ]);
    assert_found(&[
        "\"Secret\": \"Segreto2024\"",
        "\"Token\": \"Token Qm7vR2xK9pLw4TzN8cYdH3sL\"",
        "Authorization: Token Qm7vR2xK9pLw4TzN8cYdH3sL",
    ]);
}

/// A password's entry named under a key that says where the password is kept, in a YAML block of
/// its own; the same name under the password's own key is a weak literal still.
#[test]
fn an_entry_name_under_a_password_entry_key_is_a_name() {
    assert_clean(&["auth:\n  existingSecret: shop-db\n  rootPasswordKey: mariadb-root-password"]);
    assert_found(&["auth:\n  rootPassword: mariadb-root-password"]);
}

/// A token's tail typed over with `x`, a name before a quoted reference on a command line, a word
/// joined to the next by a typographic dash and a translation naming a versioned product are no
/// values; a generated value in each place is.
#[test]
fn typed_over_tails_quoted_references_and_dashes_are_no_values() {
    assert_clean(&[
        "\"id_token\": \"eyJhbGciOiJFUzI1NiIsImtpZCI6Ixxxxxxxxxxxxxxxxx\"",
        "ci-runner exec --secret registry_token=\"$REGISTRY_TOKEN\" job.yaml",
        "Keep the webhook secret safe—you'll need it again when rotating.",
        "\"Failed to connect the Web3 wallet\": \"Web3-Wallet konnte nicht verbunden werden\"",
    ]);
    assert_found(&[
        "\"id_token\": \"eyJhbGciOiJFUzI1NiIsImtpZCI6IkQ5eHJ2In0.eyJzdWIiOiIxMjM0In0.Qm7vR2xK9pLw4TzN8cYdH3sL\"",
        "ci-runner exec --secret registry_token=Qm7vR2xK9pLw4TzN8cYdH3sL job.yaml",
        "Keep the webhook secret Qm7vR2xK9pLw4TzN8cYdH3sL safe.",
        "\"Wallet secret\": \"Web3Qm7vR2xK9pLw4TzN8cYd\"",
    ]);
}

/// A line of settings joined by commas (a server's statistics, metric labels): the next lowercase
/// `name=` ends the value before it, so a count is judged as a count; a password before such a
/// setting, or one holding a comma, is still one.
#[test]
fn a_line_of_comma_joined_settings_is_no_password() {
    assert_clean(&[
        "db3:keys=90210,expires=4,avg_ttl=86400000",
        "shard stats: tokens=311,evicted=2,hit_ratio=0.97",
        "cache_keys=7731,misses=19,max_entries=10000",
    ]);
    assert_found(&[
        "db_password=Tq4#vLm9!zR2wQ,retries=3",
        "password=Tq4#vLm9!zR2,wQp8&xK",
        "api_token=Qm7vR2xK9pLw4TzN8cYdH3sL,region=eu",
    ]);
}

/// What a command that reads a stored secret prints under it: the secret alone on the next line
/// (a password store, a secret manager, a field the command names as a password) or a JSON
/// document's `"value"`; a field the command names as something else prints a secret only when
/// it looks generated, and an error message, a document or the next prompt is no secret.
#[test]
fn what_a_secret_reading_command_prints_is_judged_as_its_secret() {
    assert_found(&[
        "$ vault kv get -field=db_password kv/shop\nWq7!rT2mZk9Lx",
        "dev@ci:~/infra$ gcloud secrets versions access 3 --secret=smtp-relay\nVb4#nQ8sLm2Tz",
        "PS C:\\ops> Get-Secret -Name Smtp -AsPlainText\nVb4#nQ8sLm2Tz",
        "# bw get password mail.example.org\nVb4#nQ8sLm2Tz",
        "$ kubectl -n shop get secret api -o jsonpath='{.data.signing_key}' | base64 -d\nVb4#nQ8sLm2Tz",
        "$ op read op://Ops/smtp/hostname\nq7Wm2XkLr9TzN4vP8cYdH3sLqQ",
        "$ az keyvault secret show --vault-name ops-kv -n smtp\n{\n  \"attributes\": {},\n  \"value\": \"Vb4#nQ8sLm2Tz\"\n}",
    ]);
    assert_clean(&[
        "$ vault kv get -field=db_user kv/shop\nshop_reporting",
        "$ op read op://Ops/smtp/hostname\nsmtp-relay.ops.internal",
        "$ gcloud secrets versions access 3 --secret=smtp-relay\nERROR: (gcloud.secrets.versions.access) PERMISSION_DENIED",
        "$ gopass show ops/smtp\n$ gopass ls",
        "$ heroku config:get WEB_CONCURRENCY\n4",
        "$ az keyvault secret show --vault-name ops-kv -n smtp\n{\n  \"value\": \"${SMTP_PASSWORD}\"\n}",
        "vault read -field=lease_duration sys/leases\n768h",
    ]);
}

/// A secret flag whose value lists settings (BuildKit's `--secret id=…,src=…`) or is a name of
/// lowercase words (`--secret-id shop/db/primary`) names where the secret is, not the secret; a
/// password flag's value holding `=`, or a password after `--secret`, is still the password.
#[test]
fn a_secret_flag_listing_settings_names_no_secret() {
    assert_clean(&[
        "docker buildx build --secret id=pip,src=$HOME/.config/pip/pip.conf -t app .",
        "podman build --secret=id=gh,env=GH_TOKEN .",
        "gcloud secrets versions add --secret smtp-relay --data-file=-",
        "aws secretsmanager describe-secret --secret-id shop/db/primary",
        // A version ending a name of joined words.
        "docker run --secret=pip_conf_v2 --rm app",
    ]);
    assert_found(&[
        "deploy --password=ab=Wq7rT2mZk9Lx",
        // Words joined name a secret after a secret's flag only: after a password's, a passphrase.
        "deploy --password=correct-horse-battery-staple",
        "deploy --secret=hunter22",
        "deploy --secret=x9_Qm7vR2xK9pLw",
        "deploy --secret Wq7rT2mZk9Lx,id=x",
    ]);
}

/// A secret-reading command whose output is piped on (`| base64 -d | sha256sum`), written to a
/// file, queried for metadata (`--query VersionId`) or run with no entry prints no secret; with no
/// prompt before it only a generated value under it counts (a script's next command does not),
/// nor is an id or a digest
/// under a field that names none (a commit, a UUID, a serial, `ami-…`); the same commands behind
/// a bracketed or a virtual environment's prompt, and `terraform output -raw`, `secret-tool
/// lookup`, `--query Parameter.Value --output text`, print their secret.
#[test]
fn a_printed_id_digest_or_piped_output_is_no_secret() {
    assert_clean(&[
        "$ kubectl get secret edge-tls -o jsonpath='{.data.tls\\.key}' | base64 -d | openssl rsa -noout -modulus | md5sum\n3b1f0c9e2d7a4b8c6e5f1a0d9c8b7e6f  -",
        "$ op read op://Ops/api/password | wc -c\n      25",
        "$ aws secretsmanager get-secret-value --secret-id shop/api --query CreatedDate --output text\n2024-03-11T09:14:52.118000+00:00",
        "$ aws secretsmanager get-secret-value --secret-id shop/api --query VersionId --output text\n8c41e7d2-5b9a-4f03-a6e1-3d7c0b2f9e54",
        "$ pass show\nPassword_Store",
        "$ heroku config:get BUILD_COMMIT\n9a4e1c7b3f20d8e6a5c4b1f0e9d8c7b6a5f4e3d2",
        "$ doppler secrets get RELEASE_ID --plain\n2f7d9e4c-18ab-4c5e-9f31-7a6b5c4d3e2f",
        "$ vault read -field=serial_number pki_int/cert/ca\n3c:9f:1a:77:b2:04:e5:8d:6c:21:0f:93:5a:e8:4b:17",
        "$ aws ssm get-parameter --name /aws/service/ecs/optimized-ami/amazon-linux-2/recommended/image_id --with-decryption\n{\n  \"Parameter\": {\n    \"Value\": \"ami-07d2c1b9f4a3e6850\"\n  }\n}",
        "vault kv get -field=password kv/billing\nset_env_from_secret",
        "gcloud secrets versions access latest --secret=billing-db > /tmp/pw\nResourceNotFoundException",
        "$ gcloud secrets versions access latest --secret=billing-db --out-file=db.txt\nUpdatedSecretVersion",
    ]);
    assert_found(&[
        "[ops@bastion infra]$ vault kv get -field=password kv/billing\nGf8!wNq2Lz7Rk",
        "(.venv) $ op read op://Ops/billing/credential\nGf8wNq2Lz7RkP4sX",
        "$ terraform output -raw admin_password\nGf8!wNq2Lz7Rk",
        "$ secret-tool lookup service billing account ops\nGf8!wNq2Lz7Rk",
        "$ aws ssm get-parameter --name /billing/db --with-decryption --query Parameter.Value --output text\nGf8wNq2Lz7RkP4sXc9Tm",
        "$ kubectl get secret billing -o go-template='{{.data.token | base64decode}}'\nGf8wNq2Lz7RkP4sXc9Tm",
        "vault kv get -field=password kv/billing\nGf8wNq2Lz7RkP4sXc9Tm",
    ]);
}

/// The shell's previous directory (`OLDPWD`, in `env` output) is a path, relative too; a password
/// under a key holding `pwd` is still one.
#[test]
fn the_shells_previous_directory_is_no_password() {
    assert_clean(&[
        "OLDPWD=repos/shop-api",
        "export OLDPWD=src/lib",
        "PWD=/home/dev/shop\nOLDPWD=shop-web",
    ]);
    assert_found(&[
        "OLD_DB_PWD=repos/Xk29mWq1",
        "OLDPWD_BACKUP=Xk29mWq1zPo",
        "pwd=Xk29mWq1zPo",
    ]);
}

/// A key whose last word is `mode` or `class` names a setting or a type, not the secret its
/// first word names.
#[test]
fn a_mode_or_a_class_of_a_secret_is_no_secret() {
    assert_clean(&[
        "  \"auth_token_delivery_mode\": \"push\",",
        "credential_store_class = VaultBackedStore2",
    ]);
}

/// A placeholder in capitals may hold a count as a word of its own (`FIRST_16_CHARS_OF_KEY_ID`).
#[test]
fn a_capital_placeholder_with_a_count_is_no_value() {
    assert_clean(&["$ gpg --recv-keys FIRST_16_CHARS_OF_KEY_ID\nnow what"]);
}

/// A variable of camel-case words with a digit, unquoted in code (`Key: hmacKeyV2Bytes`).
#[test]
fn a_camel_case_variable_in_code_is_no_value() {
    assert_clean(&["\topts := Options{Key: hmacKeyV2Bytes}"]);
}

/// A word glued to a template's tag is the template's text.
#[test]
fn a_word_before_a_template_tag_is_no_value() {
    assert_clean(&[
        "{% blocktrans %}Token Expired{% endblocktrans %}",
        "<h2>{% trans \"Reset\" %}Password Forgotten{% endtrans %}</h2>",
    ]);
}

/// A secret word read inside sops' encrypted comment's base64 names nothing.
#[test]
fn a_sops_encrypted_comment_is_no_assignment() {
    assert_clean(&[
        "#ENC[AES256_GCM,data:q8Zr0pWD7Lk2Vb9xNc4T,iv:W9ZtQx3LmR7vYp2KsN8cBd6HfJ1gUe5aXo4iTr0wEyk=,tag:Pn3Xk9Lq2Vz7Rt5Wm1Yb8A==,type:comment]",
    ]);
}

/// A secret word that is a segment of a URN (`urn:ietf:params:oauth:…`) names a namespace, and
/// what follows it in an interpolated string is code, not its value.
#[test]
fn a_secret_word_in_a_urn_is_no_key() {
    assert_clean(&[
        "const t = `${base}?assertion_type=${enc(\"urn:ietf:params:oauth:client-assertion-type:jwt-bearer\")}&id=${enc(clientId)}`",
    ]);
}

/// A key whose last word names a duration (`…_lifespan`, `…_lifetime`) holds a time, even after
/// `authorization`; the same keys without that word still hold the secret.
#[test]
fn a_key_naming_a_duration_holds_no_secret() {
    assert_clean(&[
        "{\n  \"client_id\": \"web\",\n  \"refresh_token_lifespan\": \"72h0m0s\",\n}",
        "oauth:\n  authorization_code_lifetime: 1h30m0s",
    ]);
    assert_found(&[
        "{\n  \"client_id\": \"web\",\n  \"refresh_token\": \"twpkWZXM7obo4hcPTp62aGJM\",\n}",
        "oauth:\n  authorization_code: mFoJNUvayW3u0jOQtziJGBcrFfzO",
    ]);
}

/// TypeScript's non-null assertions along a member path (`session!.tokens!.access`) are code; a
/// literal after the key, or a password ending with `!` and no member after it, is still a value.
#[test]
fn a_non_null_member_path_is_no_value() {
    assert_clean(&["  const creds = {\n    accessToken: session!.tokens!.access,\n  };"]);
    assert_found(&[
        "  const creds = {\n    accessToken: \"OYIiHv8yZejaJWjdoPg0\",\n  };",
        "smtp:\n  password: Gxzd.R5qsQ!",
    ]);
}

/// A template of references only, one of them a call (`${encodeURIComponent(path)}`), is an
/// expression; a literal's own characters around a reference still make it a literal.
#[test]
fn a_template_of_calls_is_no_value() {
    assert_clean(&["const lockKey = `${tenant}:${encodeURIComponent(path)}`;"]);
    assert_found(&["const apiKey = `${prefix}-${fetchKey(name)}Gxzd67R5qsQEXndw`;"]);
}

/// An entry's name behind `$` that ends with the key's own word (`$smtp-password`) is resolved
/// from a secret store; a generated value behind `$` is a value.
#[test]
fn a_dollar_entry_name_is_no_value() {
    assert_clean(&["notifier:\n  password: $smtp-password\n  apiToken: $jira-api-token"]);
    assert_found(&[
        "notifier:\n  token: $x9Kq-TzP4mW8",
        "notifier:\n  password: $mtp-Gxzd67R5",
    ]);
}

/// A Go checksum line's `h1:` hash is no token, whatever its module is named; a token on a line
/// whose `h1:` holds no hash is one.
#[test]
fn a_go_checksum_is_no_token() {
    assert_clean(&[
        "github.com/acme/securecookie v1.4.0/go.mod h1:2SIqfI+15JnBg3UtyMSfnbMR8O3BqsqR0aJu7Z02c8d=",
    ]);
    assert_found(&["securecookie v1.4.0 token 15JnBg3UtyMSfnbMR8O3BqsqR0aJu7Z02c8d h1:2SIqfI="]);
}

/// A type named for the key's word with words and a number before it (`tokens: OAuth2Tokens,`) is
/// an annotation; a generated value ending with that word, or a password's, is still a value.
#[test]
fn a_type_named_for_the_key_is_no_value() {
    assert_clean(&[
        "export async function refresh(\n\ttokens: OAuth2Tokens,\n\tapiKey: S3ApiKey,\n) {",
        "  static <T extends AuthToken> OAuth2AccessToken accessToken(Builder builder, T token) {",
    ]);
    assert_found(&[
        "export const cfg = {\n\ttoken: Qm7vR2xKToken,\n};",
        "db:\n  password: Summer2024Pass,",
    ]);
}

/// A file's path after a secret word in a sentence or a diff's header names a file; a generated
/// value holding a `/` is still a token.
#[test]
fn a_relative_file_path_in_a_sentence_is_no_value() {
    assert_clean(&[
        "diff --git a/conformance/IT.F.s/OP-Token-2nd.txt b/conformance/IT.F.s/OP-Token-2nd.txt",
        "the token fixtures/RS.F.T.s/OP-3rd.json is stale",
    ]);
    assert_found(&["my token is Zq8pLm2x7RtK4/vWnB3cD5eF"]);
}

/// A key whose last word says how the secret is encrypted holds a method's name.
#[test]
fn a_secret_encryption_method_is_no_value() {
    assert_clean(&["postgresql:\n  parameters:\n    password_encryption: scram-sha-256"]);
    assert_found(&["postgresql:\n  parameters:\n    password_encryption_key: twpkWZXM7obo4hcPTp62aGJM"]);
}

/// A Go struct field's tag after a secret word's type (`Keys []JsonWebKey `json:"keys"``) is a tag;
/// a generated value in a tag's shape after a secret word is still one.
#[test]
fn a_go_struct_tag_is_no_value() {
    assert_clean(&["type KeySet struct {\n\tKeys []JsonWebKey `json:\"keys,omitempty\"`\n}"]);
    assert_found(&["my signing key `api:\"Gxzd67R5qsQEXndwOYIiHv8y\"` expired"]);
}
